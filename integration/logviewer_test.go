package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// logCluster is a secure cluster with one supervisor whose workers' logs
// are capped at 1 MiB each (files of 104,857 bytes, 9 rotated kept), and
// alice's topologies on it.
type logCluster struct {
	sec   *testcluster.Security
	c     *testcluster.Cluster
	ps    []*testcluster.Process
	sup   *testcluster.Process
	alice *client.Client
	dir   string
}

// TestLogviewer: workers' logs over HTTPS from the supervisor, with
// Storm's logviewer API, to the topology's readers only; stormctl logs
// reads and follows them across rotations; the files are capped and
// private; and nothing a worker prints reaches ZooKeeper, which anyone
// may read.
func TestLogviewer(t *testing.T) {
	sec := testcluster.NewSecurity(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSecurity(sec))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 15*time.Second)
	slots := testcluster.FreePorts(t, 7) // a slot for each topology below
	supArgs := testcluster.WithArgs("--logviewer.max.per.worker.logs.size.mb", "1", "--logs.users", "lou")
	sup, err := c.StartSupervisor(testcluster.WithSlots(slots...), supArgs)
	if err != nil {
		t.Fatal(err)
	}
	lc := &logCluster{sec: sec, c: c, ps: ps, sup: sup, alice: sdkClient(t, sec.Client(t, "alice"), ps...), dir: t.TempDir()}
	restart := func(t *testing.T) {
		if err := lc.sup.Stop(syscall.SIGKILL, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if lc.sup, err = c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...), supArgs); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("read, search, download, who may", lc.readers)
	t.Run("path tricks and bad input", lc.badInput)
	t.Run("rotation at the cap, private files", lc.rotation)
	t.Run("stormctl logs follows across rotations", lc.follow)
	t.Run("worker output stays out of ZooKeeper", func(t *testing.T) { lc.notInZooKeeper(t, z) })
	t.Run("a supervisor killed and started again loses no line", func(t *testing.T) { lc.restart(t, restart) })
	t.Run("a worker restarted on request: its runs' lines whole, in order", lc.restartOnRequest)
}

// restartOnRequest: a worker restarted on request while it prints, and
// while a process it started outside its group still prints after it
// ends, has a log holding each run's lines once, in order, the first
// run's last line before the second run's first: its keeper reports the
// end only once the output is written, so the next run's keeper never
// writes the same log beside it.
func (lc *logCluster) restartOnRequest(t *testing.T) {
	script := `run=$(date +%s%N); main=$$
setsid sh -c 'while kill -0 '$main' 2>/dev/null; do sleep 0.01; done; j=0; while [ $j -lt 30 ]; do echo "late '$run' $j"; j=$((j+1)); sleep 0.01; done' &
i=0; while :; do echo "main $run $i"; i=$((i+1)); sleep 0.01; done`
	id, wk := lc.run(t, "restarted", script, nil)
	file := url.QueryEscape(fmt.Sprintf("%s/%d/worker.log", id, wk.GetPort()))
	read := func() []string {
		code, _, body := lc.get(t, lc.sec.Client(t, "alice"), wk.GetLogLink(), "/api/v1/log?file="+file+"&start=0&length=1048576")
		if code != 200 {
			t.Fatalf("the log: %d %s", code, body)
		}
		return strings.Split(body, "\n")
	}
	testcluster.WaitFor(t, 10*time.Second, "the first run printing", func() error {
		if lines := read(); len(lines) < 20 {
			return fmt.Errorf("%d lines", len(lines))
		}
		return nil
	})
	if _, err := lc.alice.RestartWorker(t.Context(), "restarted", fmt.Sprintf("%s:%d", wk.GetHost(), wk.GetPort())); err != nil {
		t.Fatal(err)
	}
	var lines []string
	testcluster.WaitFor(t, 30*time.Second, "the second run printing after the first's last late line", func() error {
		lines = read()
		runs := map[string]bool{}
		for _, l := range lines {
			if f := strings.Fields(l); len(f) == 3 {
				runs[f[1]] = true
			}
		}
		if len(runs) < 2 || !strings.Contains(strings.Join(lines, "\n"), " 29\n") {
			return fmt.Errorf("%d lines of %d runs", len(lines), len(runs))
		}
		return nil
	})
	lines = lines[:len(lines)-1] // the last may be half written
	var runs []string
	next := map[string]int{}
	for n, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("line %d is %q, not a worker's", n, l)
		}
		kind, run := f[0], f[1]
		if len(runs) == 0 || runs[len(runs)-1] != run {
			if slices.Contains(runs, run) {
				t.Fatalf("line %d (%q): run %s printed again after run %s began: two writers", n, l, run, runs[len(runs)-1])
			}
			runs = append(runs, run)
		}
		key := kind + " " + run
		if want := strconv.Itoa(next[key]); f[2] != want {
			t.Fatalf("line %d is %q, want %s %s: lost, doubled or out of order", n, l, key, want)
		}
		next[key]++
		if kind == "main" && next["late "+run] > 0 {
			t.Fatalf("line %d is %q: the run printed after its own end", n, l)
		}
	}
	if len(runs) < 2 || next["late "+runs[0]] != 30 {
		t.Fatalf("runs %v, the first's late lines %d; want 2 runs, 30", runs, next["late "+runs[0]])
	}
}

// restart: a worker that prints numbered lines while its supervisor is
// killed and started again keeps every line in its log, once, in order:
// its keeper holds the log, and the new supervisor's logviewer serves it.
func (lc *logCluster) restart(t *testing.T, restart func(*testing.T)) {
	_, wk := lc.run(t, "kept", `i=0; while :; do echo "kept $i"; i=$((i+1)); sleep 0.005; done`, nil)
	restart(t)
	var link string
	testcluster.WaitFor(t, 30*time.Second, "the worker adopted, with the new logviewer's link", func() error {
		info, err := lc.alice.GetTopologyInfo(t.Context(), "kept")
		if err != nil {
			return err
		}
		ws := info.GetWorkers()
		if len(ws) != 1 || ws[0].GetPid() != wk.GetPid() || ws[0].GetState() != "running" || ws[0].GetLogLink() == wk.GetLogLink() {
			return fmt.Errorf("workers %v", ws)
		}
		link = ws[0].GetLogLink()
		return nil
	})
	u, _ := url.Parse(link)
	code, _, body := lc.get(t, lc.sec.Client(t, "alice"), link, u.Path+"?"+u.RawQuery+"&start=0&length=1048576")
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if code != 200 || len(lines) < 100 {
		t.Fatalf("%d, %d lines", code, len(lines))
	}
	for i, l := range lines[:len(lines)-1] { // the last may be half written
		if l != fmt.Sprintf("kept %d", i) {
			t.Fatalf("line %d is %q, want kept %d", i, l, i)
		}
	}
}

// run submits a one-worker topology of alice's that runs script, with
// conf, and returns its id and worker once it runs with a log link.
func (lc *logCluster) run(t *testing.T, name, script string, conf map[string]string) (string, *nimbusv1.WorkerSummary) {
	t.Helper()
	spec := &nimbusv1.TopologySpec{Name: name, NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"/bin/sh", "-c", script}, Config: conf}
	data := randomBytes(t, 100)
	resp, err := lc.alice.SubmitTopology(t.Context(), spec, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	var wk *nimbusv1.WorkerSummary
	testcluster.WaitFor(t, 30*time.Second, name+"'s worker running with a log link", func() error {
		info, err := lc.alice.GetTopologyInfo(t.Context(), name)
		if err != nil {
			return err
		}
		if ws := info.GetWorkers(); len(ws) == 1 && ws[0].GetState() == "running" && ws[0].GetLogLink() != "" {
			wk = ws[0]
			return nil
		}
		return fmt.Errorf("workers %v", info.GetWorkers())
	})
	return resp.GetTopologyId(), wk
}

// get GETs the logviewer at link's host with path and query, as id.
func (lc *logCluster) get(t *testing.T, id testcluster.Identity, link, pathQuery string) (int, http.Header, string) {
	t.Helper()
	cfg, err := id.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(u.Scheme + "://" + u.Host + pathQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func errorMessage(body string) string {
	var e struct{ ErrorMessage string }
	_ = json.Unmarshal([]byte(body), &e)
	return e.ErrorMessage
}

func (lc *logCluster) readers(t *testing.T) {
	id, wk := lc.run(t, "chatty", `i=0; while :; do echo "chatty line $i"; i=$((i+1)); sleep 0.05; done`,
		map[string]string{"topology.users": "bob", "logs.users": "lena"})
	link := wk.GetLogLink()
	if want := fmt.Sprintf("https://127.0.0.1:"); !strings.HasPrefix(link, want) ||
		!strings.HasSuffix(link, "/api/v1/log?file="+url.QueryEscape(fmt.Sprintf("%s/%d/worker.log", id, wk.GetPort()))) {
		t.Fatalf("log link %q", link)
	}
	file := url.QueryEscape(fmt.Sprintf("%s/%d/worker.log", id, wk.GetPort()))
	alice := lc.sec.Client(t, "alice")
	testcluster.WaitFor(t, 10*time.Second, "chatty line 42 in the log", func() error {
		code, _, body := lc.get(t, alice, link, "/api/v1/log?file="+file+"&start=0&length=1000000")
		if code != 200 || !strings.Contains(body, "chatty line 42\n") || !strings.HasPrefix(body, "chatty line 0\n") {
			return fmt.Errorf("%d %.200q", code, body)
		}
		return nil
	})
	// The REST API links the worker to the same place (workerLogLink).
	ui := lc.c.UIClientAs(t, alice)
	resp, err := ui.Get(lc.ps[0].UIURL() + "/api/v1/topology/" + id)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Workers []struct{ WorkerLogLink string } `json:"workers"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if len(page.Workers) != 1 || page.Workers[0].WorkerLogLink != link {
		t.Fatalf("REST workers %+v, want workerLogLink %s", page.Workers, link)
	}

	// Search: a plain substring, with the line around it.
	code, _, body := lc.get(t, alice, link, "/api/v1/search?file="+file+"&search-string="+url.QueryEscape("chatty line 42\n")+"&num-matches=5")
	var found struct {
		Matches []struct {
			ByteOffset   int64
			BeforeString string
			LogviewerURL string
		}
	}
	if err := json.Unmarshal([]byte(body), &found); err != nil || code != 200 || len(found.Matches) != 1 ||
		!strings.HasPrefix(found.Matches[0].LogviewerURL, "https://") {
		t.Fatalf("search: %d %s", code, body)
	}
	code, _, body = lc.get(t, alice, link, "/api/v1/deepSearch/"+id+"?search-string=chatty+line+7%0A")
	if code != 200 || !strings.Contains(body, `"port":"`+strconv.Itoa(int(wk.GetPort()))+`"`) || !strings.Contains(body, `"byteOffset"`) {
		t.Fatalf("deepSearch: %d %s", code, body)
	}
	code, h, body := lc.get(t, alice, link, "/api/v1/download?file="+file)
	if code != 200 || !strings.HasPrefix(body, "chatty line 0\n") || !strings.Contains(h.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %d %v %.100q", code, h, body)
	}
	code, _, body = lc.get(t, alice, link, "/api/v1/listLogs?topologyId="+id)
	if code != 200 || body != fmt.Sprintf("[%q]\n", fmt.Sprintf("%s/%d/worker.log", id, wk.GetPort())) {
		t.Fatalf("listLogs: %d %s", code, body)
	}

	// Who may: the owner, topology.users, the topology's logs.users, the
	// supervisor's logs.users and admins; nobody else, and nobody without
	// a certificate.
	for _, who := range []testcluster.Identity{lc.sec.Client(t, "bob"), lc.sec.Client(t, "lena"), lc.sec.Client(t, "lou"), lc.sec.Admin} {
		if code, _, body := lc.get(t, who, link, "/api/v1/log?file="+file); code != 200 || !strings.Contains(body, "chatty line") {
			t.Errorf("%s: %d %.200s", who.Principal, code, body)
		}
	}
	for _, path := range []string{"/api/v1/log?file=" + file, "/api/v1/download?file=" + file, "/api/v1/listLogs?topologyId=" + id,
		"/api/v1/search?file=" + file + "&search-string=chatty", "/api/v1/deepSearch/" + id + "?search-string=chatty"} {
		code, _, body := lc.get(t, lc.sec.Client(t, "trudy"), link, path)
		if code != 403 || !strings.Contains(errorMessage(body), "trudy may not read the worker logs of "+id) || strings.Contains(body, "chatty line") {
			t.Errorf("trudy %s: %d %s", path, code, body)
		}
		if code, _, body := lc.get(t, lc.sec.Anonymous(), link, path); code != 401 || strings.Contains(body, "chatty line") {
			t.Errorf("no certificate %s: %d %s", path, code, body)
		}
	}
	// Without topologyId, listLogs lists only what the caller may read.
	if code, _, body := lc.get(t, lc.sec.Client(t, "trudy"), link, "/api/v1/listLogs"); code != 200 || body != "[]\n" {
		t.Errorf("trudy's listLogs: %d %s", code, body)
	}

	// stormctl topology --logs reads the tail from the logviewer.
	out, errOut, exit := stormctl(t, "--config", lc.config(t, alice), "topology", "chatty", "--logs")
	if exit != 0 || !regexp.MustCompile(`\n  chatty line \d+\n`).MatchString(out) {
		t.Fatalf("topology --logs: exit %d\n%s\n%s", exit, out, errOut)
	}
	// stormctl logs with --grep, as bob.
	out, errOut, exit = stormctl(t, "--config", lc.config(t, lc.sec.Client(t, "bob")), "logs", "chatty", "--grep", `^chatty line 4[0-9]$`, "--bytes", "0")
	if exit != 0 || !strings.HasPrefix(out, "chatty line 40\nchatty line 41\n") || strings.Count(out, "\n") != 10 {
		t.Fatalf("logs --grep: exit %d\n%s\n%s", exit, out, errOut)
	}
	if _, errOut, exit := stormctl(t, "--config", lc.config(t, lc.sec.Client(t, "trudy")), "logs", "chatty"); exit == 0 ||
		!strings.Contains(errOut, "trudy may not read the worker logs") {
		t.Fatalf("logs as trudy: exit %d, %s", exit, errOut)
	}
}

// config writes a stormctl configuration as id.
func (lc *logCluster) config(t *testing.T, id testcluster.Identity) string {
	t.Helper()
	dir := filepath.Join(lc.dir, id.Principal)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path, err := id.WriteConfig(dir, testcluster.Addrs(lc.ps...))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func (lc *logCluster) badInput(t *testing.T) {
	id, wk := lc.run(t, "quiet", `echo hello; exec sleep 600`, nil)
	link, alice := wk.GetLogLink(), lc.sec.Client(t, "alice")
	dir := filepath.Join(lc.sup.LocalDir, "workers-artifacts", id, strconv.Itoa(int(wk.GetPort())))
	// A symlink planted in the worker's directory, to a file outside.
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "worker.log.5")); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("%s/%d/", id, wk.GetPort())
	for _, tc := range []struct {
		path  string
		code  int
		field string
	}{
		{"/api/v1/log?file=" + url.QueryEscape("../../../../etc/passwd"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(base+"../../../etc/passwd"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape("/etc/passwd"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(base+"worker.yaml"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(base+"worker.log.5"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(base+"worker.log") + "&length=1073741824", 400, "length: "},
		{"/api/v1/log?file=" + url.QueryEscape(fmt.Sprintf("%s/%d/worker.log", id, 1)), 404, "port: "},
		{"/api/v1/log?file=" + url.QueryEscape("nosuch-1-1700000000/6700/worker.log"), 404, "file: no logs of topology"},
		{"/api/v1/search?file=" + url.QueryEscape(base+"worker.log") + "&search-string=" + strings.Repeat("(a*)*", 300), 400, "search-string: "},
		{"/api/v1/listLogs?topologyId=nosuch-1-1700000000", 404, "topologyId: "},
		{"/api/v1/deepSearch/" + id + "?search-string=x&port=99999", 400, "port: "},
	} {
		code, _, body := lc.get(t, alice, link, tc.path)
		if code != tc.code || !strings.Contains(errorMessage(body), tc.field) || strings.Contains(body, "root:") {
			t.Errorf("%s: %d %s; want %d naming %q", tc.path, code, body, tc.code, tc.field)
		}
	}
	// A POST changes nothing and is refused.
	cfg, _ := alice.TLSConfig()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	u, _ := url.Parse(link)
	resp, err := hc.Post(link, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d", u.Path, resp.StatusCode)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "worker.log")); string(b) != "hello\n" {
		t.Errorf("worker.log now %q", b)
	}
}

func (lc *logCluster) rotation(t *testing.T) {
	// 3 MB of 100-byte lines at once, then quiet.
	id, wk := lc.run(t, "flood", `head -c 3000000 /dev/zero | tr '\0' x | fold -w 99; exec sleep 600`, nil)
	dir := filepath.Join(lc.sup.LocalDir, "workers-artifacts", id, strconv.Itoa(int(wk.GetPort())))
	const fileMax = 1 << 20 / 10
	testcluster.WaitFor(t, 30*time.Second, "nine rotated files, the oldest gone", func() error {
		if _, err := os.Stat(filepath.Join(dir, "worker.log.9")); err != nil {
			return err
		}
		var total int64
		for _, name := range []string{"worker.log", "worker.log.1", "worker.log.5", "worker.log.9"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			if fi.Size() > fileMax || fi.Mode().Perm() != 0o640 {
				t.Fatalf("%s: %d bytes, mode %v; want at most %d, 0640", name, fi.Size(), fi.Mode().Perm(), fileMax)
			}
			total += fi.Size()
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "worker.log.10")); !os.IsNotExist(err) {
		t.Fatalf("worker.log.10: %v", err)
	}
	var total int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		if strings.HasPrefix(e.Name(), "worker.log") {
			total += fi.Size()
		}
	}
	if total > 1<<20 {
		t.Fatalf("the worker's logs hold %d bytes, over the 1 MiB cap", total)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o750 {
			t.Fatalf("%s: %v %v, want 0750", d, fi.Mode().Perm(), err)
		}
	}
	// listLogs names them all, current first; each is a whole number of lines.
	code, _, body := lc.get(t, lc.sec.Client(t, "alice"), wk.GetLogLink(), "/api/v1/listLogs?topologyId="+id)
	if code != 200 || !strings.Contains(body, fmt.Sprintf(`["%s/%d/worker.log","%s/%d/worker.log.1",`, id, wk.GetPort(), id, wk.GetPort())) {
		t.Fatalf("listLogs: %d %s", code, body)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "worker.log.5"))
	if len(b)%100 != 0 || !bytes.HasSuffix(b, []byte("x\n")) {
		t.Fatalf("worker.log.5 is not whole lines: %d bytes", len(b))
	}
}

// follow: stormctl logs -f prints every line of a worker that rotates its
// log about once a second, none twice and none lost.
func (lc *logCluster) follow(t *testing.T) {
	lc.run(t, "burst", `i=0; while :; do j=0; while [ $j -lt 20 ]; do printf 'burst %08d %080d\n' $i 0; i=$((i+1)); j=$((j+1)); done; sleep 0.02; done`, nil)
	out, errOut, exit := stormctl(t, "--config", lc.config(t, lc.sec.Client(t, "alice")), "--timeout", "6s",
		"logs", "burst", "-f", "--interval", "100ms", "--bytes", "0")
	if exit != 0 {
		t.Fatalf("logs -f: exit %d: %s", exit, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	first, err := strconv.Atoi(strings.Fields(lines[0])[1])
	if err != nil {
		t.Fatalf("first line %q", lines[0])
	}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != fmt.Sprintf("%08d", first+i) {
			t.Fatalf("line %d is %q, want burst %08d (%d lines from %d)", i, l, first+i, len(lines), first)
		}
	}
	// 100-byte lines at about 1,000 a second in files of 104,857 bytes:
	// six seconds cross several rotations.
	if len(lines) < 2*(1<<20/10)/100 {
		t.Fatalf("followed %d lines only", len(lines))
	}
}

// notInZooKeeper: a worker that prints a secret and reports it as an
// error leaves it in its log, readable by its owner through the
// logviewer, and nowhere in its supervisor's node, which an anonymous
// ZooKeeper client reads.
func (lc *logCluster) notInZooKeeper(t *testing.T, z *testcluster.ZooKeeper) {
	const secret = "jdbc:postgresql://db/prod?password=hunter2"
	script := `echo "connecting to ` + secret + `"; echo "cannot connect to ` + secret + `" >>"$STORM_ERROR_FILE"; sleep 2; echo bye >&2; exit 3`
	spec := &nimbusv1.TopologySpec{Name: "leaky", NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"/bin/sh", "-c", script}}
	data := randomBytes(t, 100)
	resp, err := lc.alice.SubmitTopology(t.Context(), spec, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	anon := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	node := "/storm/supervisors/" + lc.sup.ID()
	sawReported, sawExit := false, false
	testcluster.WaitFor(t, 60*time.Second, "the leaky worker failing twice, its node read anonymously each second", func() error {
		data, _, err := anon.Get(node)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte("hunter2")) || bytes.Contains(data, []byte("connecting to")) || bytes.Contains(data, []byte("bye")) {
			t.Fatalf("an anonymous read of %s finds the worker's output: %q", node, data)
		}
		sawReported = sawReported || bytes.Contains(data, []byte("the worker reported an error"))
		sawExit = sawExit || bytes.Contains(data, []byte("exit status 3"))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		info, err := lc.alice.GetTopologyInfo(ctx, "leaky")
		if err != nil {
			return err
		}
		if ws := info.GetWorkers(); len(ws) != 1 || ws[0].GetRestarts() < 2 || !sawReported || !sawExit {
			return fmt.Errorf("workers %v, reported seen %v, exit seen %v", ws, sawReported, sawExit)
		}
		return nil
	})
	// The owner reads both through the logviewer.
	info, err := lc.alice.GetTopologyInfo(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	wk := info.GetWorkers()[0]
	if wk.GetLogTail() != "" || wk.GetLogLink() == "" {
		t.Fatalf("worker %v: want no tail and a log link", wk)
	}
	code, _, body := lc.get(t, lc.sec.Client(t, "alice"), wk.GetLogLink(), "/api/v1/log?file="+
		url.QueryEscape(fmt.Sprintf("%s/%d/worker.log", resp.GetTopologyId(), wk.GetPort()))+"&start=0")
	if code != 200 || !strings.Contains(body, "connecting to "+secret+"\n") ||
		!strings.Contains(body, "[supervisor] the worker reported an error: cannot connect to "+secret+"\n") || !strings.Contains(body, "bye\n") {
		t.Fatalf("the log: %d %s", code, body)
	}
}
