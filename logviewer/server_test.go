package logviewer_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/logviewer"
)

const topo = "wordcount-1-1700000000"

// serve starts a logviewer, authentication off, over a root holding one
// worker's logs on port 6700: worker.log (content) and worker.log.1.
func serve(t *testing.T, content string) (string, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), logviewer.ArtifactsDir)
	dir, err := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: topo, Owner: "olive"}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "worker.log"), []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "worker.log.1"), []byte("older needle\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	authz, err := auth.New(configs.Default(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(logviewer.New(logviewer.Config{Root: root, Authz: authz, Log: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	return srv.URL, root
}

func get(t *testing.T, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestLogReadsARange(t *testing.T) {
	base, _ := serve(t, "0123456789abcdef")
	file := url.QueryEscape(topo + "/6700/worker.log")
	code, h, body := get(t, base+"/api/v1/log?file="+file+"&start=4&length=6")
	if code != 200 || body != "456789" || h.Get("X-Log-Next") != "10" || h.Get("X-Log-File-Size") != "16" {
		t.Fatalf("%d %q next %s size %s", code, body, h.Get("X-Log-Next"), h.Get("X-Log-File-Size"))
	}
	// Without start: the last length bytes.
	if code, _, body := get(t, base+"/api/v1/log?file="+file+"&length=3"); code != 200 || body != "def" {
		t.Fatalf("tail: %d %q", code, body)
	}
	// Past the end: nothing, and the size says where the end is.
	if code, h, body := get(t, base+"/api/v1/log?file="+file+"&start=100"); code != 200 || body != "" || h.Get("X-Log-File-Size") != "16" {
		t.Fatalf("past the end: %d %q", code, body)
	}
	code, h, body = get(t, base+"/api/v1/download?file="+file)
	if code != 200 || body != "0123456789abcdef" || !strings.Contains(h.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %d %q %v", code, body, h)
	}
}

// Bad input: a 4xx naming the parameter, for every trick.
func TestBadInputIsRefusedNamingTheParameter(t *testing.T) {
	base, root := serve(t, "x\n")
	// A symlink inside the worker's directory that leaves the root, and
	// one that stays inside: neither is served.
	dir := filepath.Join(root, topo, "6700")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "worker.log.2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("worker.log", filepath.Join(dir, "worker.log.3")); err != nil {
		t.Fatal(err)
	}
	other := "other-1-1700000000"
	if _, err := logviewer.Prepare(root, 6701, logviewer.Meta{TopologyID: other, Owner: "eve"}, -1); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, topo), filepath.Join(root, "link-1-1700000000")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		code  int
		field string
	}{
		{"/api/v1/log", 400, "file: missing"},
		{"/api/v1/log?file=" + url.QueryEscape("../../etc/passwd"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6700/../../../etc/passwd"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape("/etc/passwd"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.yaml"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.log.2"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.log.3"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape("link-1-1700000000/6700/worker.log"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/99999/worker.log"), 400, "file: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6799/worker.log"), 404, "port: "},
		{"/api/v1/log?file=" + url.QueryEscape("nosuch-1-1700000000/6700/worker.log"), 404, "file: no logs of topology nosuch"},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.log") + "&length=99999999", 400, "length: "},
		{"/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.log") + "&start=-1", 400, "start: "},
		{"/api/v1/search?file=" + url.QueryEscape(topo+"/6700/worker.log"), 400, "search-string: missing"},
		{"/api/v1/search?file=" + url.QueryEscape(topo+"/6700/worker.log") + "&search-string=" + strings.Repeat("a", 2000), 400, "search-string: "},
		{"/api/v1/search?file=" + url.QueryEscape(topo+"/6700/worker.log") + "&search-string=x&num-matches=0", 400, "num-matches: "},
		{"/api/v1/search?file=" + url.QueryEscape(topo+"/6700/worker.log") + "&search-string=x&start-byte-offset=50", 400, "start-byte-offset: "},
		{"/api/v1/listLogs?topologyId=nosuch-1-1700000000", 404, "topologyId: "},
		{"/api/v1/listLogs?topologyId=" + topo + "&port=6701", 404, "port: "},
		{"/api/v1/listLogs?topologyId=..", 400, "topologyId: "},
		{"/api/v1/deepSearch/nosuch-1-1700000000?search-string=x", 404, "topoId: "},
		{"/api/v1/deepSearch/" + topo + "?search-string=x&search-archived=maybe", 400, "search-archived: "},
	} {
		code, _, body := get(t, base+tc.query)
		var answer struct{ ErrorMessage string }
		_ = json.Unmarshal([]byte(body), &answer)
		if code != tc.code || !strings.Contains(answer.ErrorMessage, tc.field) {
			t.Errorf("%s: %d %s; want %d naming %q", tc.query, code, body, tc.code, tc.field)
		}
	}
	// Nothing changed: the files are as they were.
	if b, _ := os.ReadFile(filepath.Join(dir, "worker.log")); string(b) != "x\n" {
		t.Fatalf("worker.log now %q", b)
	}
}

func TestSearchAndDeepSearch(t *testing.T) {
	var log strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&log, "line %d %s\n", i, map[bool]string{true: "needle here", false: "hay"}[i%1000 == 7])
	}
	base, _ := serve(t, log.String())
	file := url.QueryEscape(topo + "/6700/worker.log")
	code, _, body := get(t, base+"/api/v1/search?file="+file+"&search-string=needle&num-matches=2")
	var res logviewer.FileSearch
	if err := json.Unmarshal([]byte(body), &res); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if len(res.Matches) != 2 || res.Matches[0].BeforeString != "line 7 " || res.Matches[0].AfterString != " here" ||
		res.NextByteOffset == nil || !strings.Contains(res.Matches[1].LogviewerURL, "/api/v1/log?file=") {
		t.Fatalf("search: %s", body)
	}
	if got := log.String()[res.Matches[1].ByteOffset:][:6]; got != "needle" {
		t.Fatalf("byteOffset points at %q", got)
	}
	// Going on from nextByteOffset finds the other three.
	code, _, body = get(t, fmt.Sprintf("%s/api/v1/search?file=%s&search-string=needle&num-matches=10&start-byte-offset=%d", base, file, *res.NextByteOffset))
	res = logviewer.FileSearch{}
	if err := json.Unmarshal([]byte(body), &res); err != nil || code != 200 || len(res.Matches) != 3 || res.NextByteOffset != nil {
		t.Fatalf("next: %d %s", code, body)
	}
	var deep logviewer.Matched
	_, _, body = get(t, base+"/api/v1/deepSearch/"+topo+"?search-string=needle&num-matches=100&port=6700")
	if err := json.Unmarshal([]byte(body), &deep); err != nil || len(deep.Matches) != 1 || len(deep.Matches[0].Matches) != 5 ||
		deep.Matches[0].Port != "6700" || deep.FileOffset != 1 {
		t.Fatalf("deepSearch: %s", body)
	}
	_, _, body = get(t, base+"/api/v1/deepSearch/"+topo+"?search-string=needle&search-archived=true&num-matches=100&port=6700")
	if err := json.Unmarshal([]byte(body), &deep); err != nil || len(deep.Matches) != 2 || deep.Matches[1].FileName != topo+"/6700/worker.log.1" {
		t.Fatalf("deepSearch archived: %s", body)
	}
	_, _, body = get(t, base+"/api/v1/listLogs?topologyId="+topo+"&port=6700")
	if body != `["`+topo+`/6700/worker.log","`+topo+`/6700/worker.log.1"]`+"\n" {
		t.Fatalf("listLogs: %s", body)
	}
}

// A search's time budget ends it with where to go on.
func TestSearchStopsAtItsBudget(t *testing.T) {
	root := filepath.Join(t.TempDir(), logviewer.ArtifactsDir)
	dir, _ := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: topo, Owner: "olive"}, -1)
	_ = os.WriteFile(filepath.Join(dir, "worker.log"), []byte(strings.Repeat("a", 4<<20)), 0o640)
	authz, _ := auth.New(configs.Default(), slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(logviewer.New(logviewer.Config{Root: root, Authz: authz, Log: slog.New(slog.DiscardHandler), SearchBudget: time.Nanosecond}))
	defer srv.Close()
	_, _, body := get(t, srv.URL+"/api/v1/search?file="+url.QueryEscape(topo+"/6700/worker.log")+"&search-string=b")
	var res logviewer.FileSearch
	if err := json.Unmarshal([]byte(body), &res); err != nil || res.NextByteOffset == nil || *res.NextByteOffset >= 4<<20 {
		t.Fatalf("%s: want nextByteOffset before the end", body)
	}
}

func TestPrepareModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), logviewer.ArtifactsDir)
	dir, err := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: topo, Owner: "olive", LogsUsers: []string{"lou"}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{root: 0o711, filepath.Dir(dir): 0o750, dir: 0o750, filepath.Join(dir, "worker.yaml"): 0o640} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "worker.yaml"))
	if !strings.Contains(string(b), "storm-id: "+topo) || !strings.Contains(string(b), "logs.users:") {
		t.Fatalf("worker.yaml: %s", b)
	}
	// A symlink in a worker directory's place is refused.
	if err := os.Symlink(t.TempDir(), filepath.Join(filepath.Dir(dir), "6701")); err != nil {
		t.Fatal(err)
	}
	if _, err := logviewer.Prepare(root, 6701, logviewer.Meta{TopologyID: topo}, -1); err == nil {
		t.Fatal("prepared through a symlink")
	}
}

func TestEnforceDeletesOldestRotatedFirst(t *testing.T) {
	root := filepath.Join(t.TempDir(), logviewer.ArtifactsDir)
	running, _ := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: topo}, -1)
	gone, _ := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: "gone-1-1700000000"}, -1)
	now := time.Now()
	write := func(dir, name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, make([]byte, 1000), 0o640)
		_ = os.Chtimes(p, now.Add(-age), now.Add(-age))
		return p
	}
	cur := write(running, "worker.log", 0)
	r1 := write(running, "worker.log.1", time.Hour)
	r2 := write(running, "worker.log.2", 2*time.Hour)
	goneLog := write(gone, "worker.log", 3*time.Hour)
	isRunning := func(id string, port int32) bool { return id == topo }
	freed, err := logviewer.Enforce(root, 2500, isRunning)
	if err != nil || freed != 2000 {
		t.Fatalf("freed %d, %v; want 2000", freed, err)
	}
	for p, kept := range map[string]bool{cur: true, r1: true, r2: false, goneLog: false} {
		if _, err := os.Stat(p); (err == nil) != kept {
			t.Errorf("%s kept %v, want %v", p, err == nil, kept)
		}
	}
	if _, err := os.Stat(filepath.Dir(gone)); !os.IsNotExist(err) {
		t.Errorf("the gone topology's directory is left: %v", err)
	}
	// Under the cap nothing goes, and a running worker's log never does.
	if freed, _ := logviewer.Enforce(root, 1, isRunning); freed != 1000 {
		t.Fatalf("freed %d, want 1000 (worker.log.1 only)", freed)
	}
	if _, err := os.Stat(cur); err != nil {
		t.Fatal("a running worker's log was deleted")
	}
}

// Storm's clients name the topology of listLogs topoId; topologyId, the
// name this logviewer first read, still works.
func TestListLogsTakesStormsTopoId(t *testing.T) {
	base, root := serve(t, "x\n")
	otherDir, err := logviewer.Prepare(root, 6701, logviewer.Meta{TopologyID: "other-1-1700000000", Owner: "olive"}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(otherDir, "worker.log"), []byte("y\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	want := `["` + topo + `/6700/worker.log","` + topo + `/6700/worker.log.1"]` + "\n"
	for _, q := range []string{"topoId=" + topo, "topologyId=" + topo} {
		if code, _, body := get(t, base+"/api/v1/listLogs?"+q); code != 200 || body != want {
			t.Errorf("%s: %d %s, want %s", q, code, body, want)
		}
	}
	if code, _, body := get(t, base+"/api/v1/listLogs?topoId=nosuch-1-1700000000"); code != 404 || !strings.Contains(body, "topoId: ") {
		t.Errorf("an unknown topoId: %d %s", code, body)
	}
	if code, _, body := get(t, base+"/api/v1/listLogs?topoId="+topo+"&topologyId=other-1-1700000000"); code != 400 || !strings.Contains(body, "topoId: ") {
		t.Errorf("two topologies: %d %s", code, body)
	}
	// Without a topology: every topology's logs.
	if code, _, body := get(t, base+"/api/v1/listLogs"); code != 200 || !strings.Contains(body, topo+"/6700/worker.log") ||
		!strings.Contains(body, "other-1-1700000000/6701/worker.log") {
		t.Errorf("every topology: %d %s", code, body)
	}
}

// deepSearch goes on where it stopped, as Storm's: fileOffset names the
// file, that file's nextByteOffset the byte, and start-file-offset and
// start-byte-offset take them back; so every file is reached, one page
// at a time.
func TestDeepSearchGoesOnAcrossFiles(t *testing.T) {
	base, root := serve(t, "a needle\nb needle\n")
	dir := filepath.Join(root, topo, "6700")
	if err := os.WriteFile(filepath.Join(dir, "worker.log.2"), []byte("oldest needle\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	type fileMatches struct {
		FileName       string
		Port           string
		Matches        []logviewer.Match
		NextByteOffset *int64
	}
	type matched struct {
		FileOffset int
		Matches    []fileMatches
	}
	var found []string
	fileOffset, byteOffset := 0, int64(0)
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatalf("no end after %d pages: %v", page, found)
		}
		code, _, body := get(t, fmt.Sprintf("%s/api/v1/deepSearch/%s?search-string=needle&num-matches=1&port=6700&search-archived=true&start-file-offset=%d&start-byte-offset=%d",
			base, topo, fileOffset, byteOffset))
		var m matched
		if err := json.Unmarshal([]byte(body), &m); err != nil || code != 200 {
			t.Fatalf("page %d: %d %s", page, code, body)
		}
		for _, f := range m.Matches {
			for _, x := range f.Matches {
				found = append(found, fmt.Sprintf("%s@%d", f.FileName[len(topo)+6:], x.ByteOffset))
			}
		}
		if len(m.Matches) == 0 || m.FileOffset >= 3 {
			break
		}
		last := m.Matches[len(m.Matches)-1]
		fileOffset, byteOffset = m.FileOffset, 0
		if last.NextByteOffset != nil {
			byteOffset = *last.NextByteOffset
		}
	}
	want := "worker.log@2 worker.log@11 worker.log.1@6 worker.log.2@7"
	if got := strings.Join(found, " "); got != want {
		t.Fatalf("found %s, want %s", got, want)
	}
	// Without a port (every worker), Storm answers one entry per port.
	code, _, body := get(t, base+"/api/v1/deepSearch/"+topo+"?search-string=needle&num-matches=5")
	var all []matched
	if err := json.Unmarshal([]byte(body), &all); err != nil || code != 200 || len(all) != 1 || len(all[0].Matches) != 1 ||
		len(all[0].Matches[0].Matches) != 2 || all[0].Matches[0].Port != "6700" {
		t.Fatalf("every port: %d %s", code, body)
	}
	for _, q := range []string{"start-file-offset=-1&port=6700", "start-byte-offset=x&port=6700", "start-file-offset=1"} {
		field := strings.Split(q, "=")[0]
		if code, _, body := get(t, base+"/api/v1/deepSearch/"+topo+"?search-string=needle&"+q); code != 400 || !strings.Contains(body, field+": ") {
			t.Errorf("%s: %d %s, want 400 naming %s", q, code, body, field)
		}
	}
}

// A symlink is refused in any part of a file's path, not only its last:
// a topology's or a worker's directory that is a link to another's
// serves nothing, even inside the root.
func TestSymlinkedDirectoriesAreRefused(t *testing.T) {
	base, root := serve(t, "x\n")
	if err := os.Symlink(topo, filepath.Join(root, "link-1-1700000000")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("6700", filepath.Join(root, topo, "6701")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"/api/v1/log?file=" + url.QueryEscape("link-1-1700000000/6700/worker.log"),
		"/api/v1/log?file=" + url.QueryEscape(topo+"/6701/worker.log"),
		"/api/v1/listLogs?topoId=link-1-1700000000",
		"/api/v1/deepSearch/link-1-1700000000?search-string=x",
	} {
		if code, _, body := get(t, base+q); code < 400 || code >= 500 {
			t.Errorf("%s: %d %s, want refused", q, code, body)
		}
	}
	// listLogs of the real topology names its real worker only.
	if _, _, body := get(t, base+"/api/v1/listLogs?topoId="+topo); strings.Contains(body, "6701") {
		t.Errorf("listLogs lists the link: %s", body)
	}
}

// Against DNS rebinding: a request whose Host is not a name of this
// supervisor (an IP address, localhost, or a name it is given) is
// refused, 403 naming the Host, before anything is read.
func TestHostNotOfThisSupervisorIsRefused(t *testing.T) {
	root := filepath.Join(t.TempDir(), logviewer.ArtifactsDir)
	dir, _ := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: topo, Owner: "olive"}, -1)
	_ = os.WriteFile(filepath.Join(dir, "worker.log"), []byte("secret\n"), 0o640)
	authz, _ := auth.New(configs.Default(), slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(logviewer.New(logviewer.Config{Root: root, Authz: authz, Log: slog.New(slog.DiscardHandler),
		HostNames: func() []string { return []string{"sup1.example"} }}))
	defer srv.Close()
	for host, want := range map[string]int{"evil.example": 403, "evil.example:8000": 403, "sup1.example:8000": 200,
		"SUP1.example.": 200, "127.0.0.1:8000": 200, "localhost": 200, "[::1]:8000": 200} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/log?file="+url.QueryEscape(topo+"/6700/worker.log"), nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 403 && (strings.Contains(string(b), "secret") || !strings.Contains(string(b), "evil.example"))) {
			t.Errorf("Host %s: %d %s, want %d", host, resp.StatusCode, b, want)
		}
	}
}

// /log names the file it read: the same file keeps its identity as it
// grows; the file a rotation puts in its place has another.
func TestLogNamesTheFileItRead(t *testing.T) {
	base, root := serve(t, "one\n")
	file := base + "/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.log")
	_, h, _ := get(t, file)
	first := h.Get(logviewer.FileIDHeader)
	if first == "" {
		t.Fatalf("no %s: %v", logviewer.FileIDHeader, h)
	}
	path := filepath.Join(root, topo, "6700", "worker.log")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString("two\n")
	f.Close()
	if _, h, _ := get(t, file); h.Get(logviewer.FileIDHeader) != first {
		t.Fatalf("grown: %s, was %s", h.Get(logviewer.FileIDHeader), first)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(path, []byte("a longer new file than the old\n"), 0o640)
	if _, h, _ := get(t, file); h.Get(logviewer.FileIDHeader) == first {
		t.Fatal("a rotated worker.log has the old one's identity")
	}
	if _, h, _ := get(t, file+".1"); h.Get(logviewer.FileIDHeader) != first {
		t.Fatalf("worker.log.1 is not the old worker.log: %s, was %s", h.Get(logviewer.FileIDHeader), first)
	}
}
