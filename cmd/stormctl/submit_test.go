package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// writeArtifact writes size random bytes to a file and returns its path
// and contents.
func writeArtifact(t *testing.T, size int) (string, []byte) {
	t.Helper()
	b := make([]byte, size)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wordcount.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// submitLeader serves a leader that receives submissions whole and answers
// resp.
func submitLeader(t *testing.T, resp *nimbusv1.SubmitTopologyResponse) (string, *fakenimbus.Server) {
	t.Helper()
	f := reader(nil, nil)
	f.OnSubmit = f.Receive(resp)
	return serveLeader(t, f), f
}

var submitted = &nimbusv1.SubmitTopologyResponse{TopologyId: "wordcount-1-1700000000", ReplicationCount: 2}

// checkArtifact fails unless f's last submission carried artifact and its
// SHA-256.
func checkArtifact(t *testing.T, f *fakenimbus.Server, artifact []byte) {
	t.Helper()
	got := f.LastSubmission()
	if !bytes.Equal(got.Artifact, artifact) {
		t.Errorf("the leader received %d bytes that differ from the %d-byte artifact", len(got.Artifact), len(artifact))
	}
	if sum := sha256.Sum256(artifact); !bytes.Equal(got.Trailer, sum[:]) {
		t.Errorf("trailer %x, want %x", got.Trailer, sum)
	}
}

func TestRunSubmit(t *testing.T) {
	t.Setenv("USER", "alice")
	addr, f := submitLeader(t, submitted)
	path, artifact := writeArtifact(t, 3<<20+17)
	args := []string{
		"--seeds", addr, "submit", "wordcount", path, "--workers", "2",
		"--component", "sentences=2", "--component", "count=4",
		"--worker-command", `java -jar '{code_dir}/app.jar' --name "word count" --port {port}`,
		"--conf", "topology.debug=true", "--conf", "opts=-Da=b -Dc=d", "--conf", "empty=",
	}

	got := runOK(t, args...)
	want := "" +
		"topology id:                 wordcount-1-1700000000\n" +
		"replication count:           2\n" +
		"replication wait timed out:  no\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	checkArtifact(t, f, artifact)

	var resp nimbusv1.SubmitTopologyResponse
	unmarshal(t, runOK(t, append([]string{"-o", "json"}, args...)...), &resp)
	if !proto.Equal(&resp, submitted) {
		t.Errorf("json: got %v, want %v", &resp, submitted)
	}

	spec := &nimbusv1.TopologySpec{
		Name:          "wordcount",
		NumWorkers:    2,
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentences", Parallelism: 2}, {Id: "count", Parallelism: 4}},
		WorkerCommand: []string{"java", "-jar", "{code_dir}/app.jar", "--name", "word count", "--port", "{port}"},
		Config:        map[string]string{"topology.debug": "true", "opts": "-Da=b -Dc=d", "empty": ""},
		InitialStatus: nimbusv1.InitialStatus_INITIAL_STATUS_ACTIVE,
		Owner:         "alice",
		ArtifactBytes: 3<<20 + 17, // the SDK declares the artifact's size
	}
	checkRequests(t, f, spec, spec)
	if f.LastSubmission().HadDeadline {
		t.Error("the submission had a deadline without --timeout: a long replication wait would cut it")
	}
}

func TestRunSubmitDefaults(t *testing.T) {
	t.Setenv("USER", "bob")
	addr, f := submitLeader(t, submitted)
	path, artifact := writeArtifact(t, 0)
	runOK(t, "--seeds", addr, "submit", "wordcount", path, "--component", "spout=1")
	runOK(t, "--seeds", addr, "--timeout", "5s", "submit", "wordcount", path, "--component", "spout=1",
		"--inactive", "--owner", "carol")
	checkArtifact(t, f, artifact)
	base := &nimbusv1.TopologySpec{
		Name:          "wordcount",
		NumWorkers:    1,
		Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact"},
		InitialStatus: nimbusv1.InitialStatus_INITIAL_STATUS_ACTIVE,
		Owner:         "bob",
	}
	inactive := proto.CloneOf(base)
	inactive.InitialStatus = nimbusv1.InitialStatus_INITIAL_STATUS_INACTIVE
	inactive.Owner = "carol"
	checkRequests(t, f, base, inactive)
	if !f.LastSubmission().HadDeadline {
		t.Error("--timeout did not bound the submission")
	}
}

func TestRunSubmitReplicationTimedOut(t *testing.T) {
	addr, _ := submitLeader(t, &nimbusv1.SubmitTopologyResponse{
		TopologyId: "wordcount-1-1700000000", ReplicationCount: 1, ReplicationWaitTimedOut: true,
	})
	path, _ := writeArtifact(t, 100)
	code, stdout, stderr := runArgs("--seeds", addr, "submit", "wordcount", path, "--component", "spout=1")
	if code != exitOK {
		t.Fatalf("exit code %d, want %d: the topology was stored", code, exitOK)
	}
	if !strings.Contains(stdout, "replication wait timed out:  yes\n") {
		t.Errorf("stdout:\n%s", stdout)
	}
	want := "WARNING: the replication wait timed out: the code of wordcount-1-1700000000 is on 1 nimbus(es), " +
		"fewer than topology.min.replication.count; it is lost if they fail before others fetch it\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

func TestRunSubmitFollowsRedirect(t *testing.T) {
	leaderAddr, leader := submitLeader(t, submitted)
	// A follower with a stale view: it names itself, then redirects after
	// the spec and the first chunk, so the file must be read again.
	follower := reader(nil, nil)
	follower.OnSubmit = fakenimbus.NotLeaderAfterFirstChunk(leaderAddr)
	followerAddr := serveLeader(t, follower)
	path, artifact := writeArtifact(t, 2<<20+5)
	runOK(t, "--seeds", followerAddr, "submit", "wordcount", path, "--component", "spout=1")
	checkArtifact(t, leader, artifact)
	if n := len(leader.Requests(leaderOnly...)); n != 1 {
		t.Errorf("the leader got %d submissions, want 1", n)
	}
}

func TestRunSubmitErrors(t *testing.T) {
	path, _ := writeArtifact(t, 10)
	for _, tc := range []struct {
		err  error
		exit int
		want string
	}{
		{
			status.Error(codes.AlreadyExists, "nimbus: topology name in use"), exitExists,
			"stormctl: submit wordcount: topology name in use\n",
		},
		{
			status.Error(codes.Unavailable, "nimbus: leadership lost"), exitUnavailable,
			"stormctl: submit wordcount: leadership lost " +
				"(it may have been stored: check with 'stormctl topology wordcount' before submitting again)\n",
		},
	} {
		// The leader refuses each submission once it has its spec.
		f := reader(nil, nil)
		f.OnSubmit = func(stream fakenimbus.SubmitStream) error {
			if _, err := stream.Recv(); err != nil {
				return err
			}
			return tc.err
		}
		addr := serveLeader(t, f)
		if stderr := runFails(t, tc.exit, "--seeds", addr, "submit", "wordcount", path, "--component", "spout=1"); stderr != tc.want {
			t.Errorf("stderr %q, want %q", stderr, tc.want)
		}
		if n := len(f.Requests(leaderOnly...)); n != 1 {
			t.Errorf("the leader got %d submissions, want 1: a submission is not retried", n)
		}
	}
}

func TestRunSubmitBadArtifact(t *testing.T) {
	addr, f := submitLeader(t, submitted)
	missing := filepath.Join(t.TempDir(), "nope.jar")
	stderr := runFails(t, exitError, "--seeds", addr, "submit", "wordcount", missing, "--component", "spout=1")
	if want := "stormctl: submit wordcount: artifact: open " + missing + ": no such file or directory\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	dir := t.TempDir()
	stderr = runFails(t, exitError, "--seeds", addr, "submit", "wordcount", dir, "--component", "spout=1")
	if want := "stormctl: submit wordcount: artifact " + dir + ": not a regular file\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if n := len(f.Requests(leaderOnly...)); n != 0 {
		t.Errorf("the leader got %d submissions, want none", n)
	}
}

func TestRunSubmitUsageErrors(t *testing.T) {
	path, _ := writeArtifact(t, 10)
	addr := testcluster.ClosedAddr(t) // a usage error makes no RPC, so nothing need listen
	for _, tc := range []struct {
		args []string
		want string // in the error line
	}{
		{[]string{}, "submit: missing NAME and ARTIFACT"},
		{[]string{"wordcount"}, "submit: missing ARTIFACT"},
		{[]string{"wordcount", path, "extra", "--component", "a=1"}, `extra argument "extra"`},
		{[]string{"wordcount", path}, "at least one --component ID=PARALLELISM is required"},
		{[]string{"wordcount", "/nonexistent"}, "at least one --component"}, // flags are checked first
		{[]string{"wordcount", path, "--component", "a"}, `--component "a": want ID=PARALLELISM`},
		{[]string{"wordcount", path, "--component", "a:1"}, `--component "a:1": want ID=PARALLELISM`},
		{[]string{"wordcount", path, "--component", "=1"}, `--component "=1": want ID=PARALLELISM`},
		{[]string{"wordcount", path, "--component", "a=-3"}, `parallelism "-3"`},
		{[]string{"wordcount", path, "--component", "a=0"}, `parallelism "0"`},
		{[]string{"wordcount", path, "--component", "a=2147483648"}, `parallelism "2147483648"`},
		{[]string{"wordcount", path, "--component", "a= 1"}, `parallelism " 1"`},
		{[]string{"wordcount", path, "--component", "a=1", "--component", "a=2"}, `component "a" given twice`},
		{[]string{"wordcount", path, "--component", "a=1", "--workers", "-1"}, "--workers -1"},
		{[]string{"wordcount", path, "--component", "a=1", "--workers", "0"}, "--workers 0"},
		{[]string{"wordcount", path, "--component", "a=1", "--workers", "two"}, "--workers"},
		{[]string{"wordcount", path, "--component", "a=1", "--worker-command", `run 'x`}, "unterminated single quote"},
		{[]string{"wordcount", path, "--component", "a=1", "--worker-command", `run x\`}, "trailing backslash"},
		{[]string{"wordcount", path, "--component", "a=1", "--worker-command", "  "}, "empty command"},
		{[]string{"wordcount", path, "--component", "a=1", "--conf", "debug"}, `--conf "debug": want KEY=VALUE`},
		{[]string{"wordcount", path, "--component", "a=1", "--conf", "=x"}, `--conf "=x": want KEY=VALUE`},
		{[]string{"wordcount", path, "--component", "a=1", "--conf", "k=1", "--conf", "k=2"}, `key "k" given twice`},
		{[]string{"wordcount", path, "--component", "a=1", "--inactive=maybe"}, "--inactive"},
	} {
		stderr := runFails(t, exitUsage, append([]string{"--seeds", addr, "submit"}, tc.args...)...)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: stderr %q, want it to contain %q", tc.args, stderr, tc.want)
		}
	}
}

// runTerminal runs a command line as if stderr were a terminal, with a
// clock that advances 30 ms at each reading.
func runTerminal(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = execute(args, &globals{
		stdout: &out, stderr: &errOut,
		terminal: func(io.Writer) bool { return true },
		now:      fakeClock(30 * time.Millisecond),
	})
	return code, out.String(), errOut.String()
}

func TestRunSubmitProgress(t *testing.T) {
	addr, f := submitLeader(t, submitted)
	big, artifact := writeArtifact(t, 5<<20+1) // 6 chunks
	small, _ := writeArtifact(t, 4<<20)

	code, _, stderr := runTerminal("--seeds", addr, "submit", "wordcount", big, "--component", "spout=1")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	checkArtifact(t, f, artifact)
	if !strings.HasPrefix(stderr, "\ruploading [") || !strings.HasSuffix(stderr, "] 100% 5.0/5.0 MiB\n") {
		t.Errorf("stderr %q, want a bar that ends at 100%% and a newline", stderr)
	}
	// Chunks 30 ms apart: the first, the fifth (120 ms later) and the
	// last draw.
	if n := strings.Count(stderr, "\r"); n != 3 {
		t.Errorf("the bar drew %d times for 6 chunks, want 3 (at most one per 100 ms): %q", n, stderr)
	}

	// No bar for 4 MiB or less, nor when stderr is not a terminal.
	if code, _, stderr := runTerminal("--seeds", addr, "submit", "wordcount", small, "--component", "spout=1"); code != exitOK || stderr != "" {
		t.Errorf("4 MiB on a terminal: exit code %d, stderr %q, want no bar", code, stderr)
	}
	runOK(t, "--seeds", addr, "submit", "wordcount", big, "--component", "spout=1")
}

// exampleFile is the example topology's file, which the quickstart submits.
var exampleFile = filepath.Join("..", "..", "examples", "wordcount", "topology.yaml")

// writeFile writes text to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunSubmitFile(t *testing.T) {
	t.Setenv("USER", "alice")
	addr, f := submitLeader(t, submitted)
	path, artifact := writeArtifact(t, 1<<20+3)

	// The example file describes what the quickstart submitted with flags.
	runOK(t, "--seeds", addr, "submit", "-f", exampleFile, path)
	checkArtifact(t, f, artifact)
	runOK(t, "--seeds", addr, "submit", "wordcount", path, "--workers", "2",
		"--component", "sentence=1", "--component", "split=2", "--component", "count=3",
		"--worker-command", "{code_dir}/artifact --port {port}")
	spec := &nimbusv1.TopologySpec{
		Name:       "wordcount",
		NumWorkers: 2,
		Components: []*nimbusv1.ComponentSpec{
			{Id: "sentence", Parallelism: 1, Kind: spout}, {Id: "split", Parallelism: 2, Kind: bolt}, {Id: "count", Parallelism: 3, Kind: bolt},
		},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
		InitialStatus: nimbusv1.InitialStatus_INITIAL_STATUS_ACTIVE,
		Owner:         "alice",
		ArtifactBytes: 1<<20 + 3,
	}
	// --component says nothing of the kind: only a file tells spouts from bolts.
	fromFlags := proto.CloneOf(spec)
	for _, c := range fromFlags.Components {
		c.Kind = nimbusv1.ComponentKind_COMPONENT_KIND_UNSPECIFIED
	}
	checkRequests(t, f, spec, fromFlags)

	// The file's artifact, relative to the file, not to the working
	// directory.
	dir := t.TempDir()
	fromFile := []byte("the artifact the file names")
	if err := os.WriteFile(filepath.Join(dir, "wc.bin"), fromFile, 0o644); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, dir, "t.yaml", "name: wc\nartifact: wc.bin\nspouts: [{id: s}]\n")
	runOK(t, "--seeds", addr, "submit", "-f", file)
	checkArtifact(t, f, fromFile)
}

func TestRunSubmitFileFlagsOverride(t *testing.T) {
	t.Setenv("USER", "alice")
	addr, f := submitLeader(t, submitted)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, otherBytes := writeArtifact(t, 10)
	file := writeFile(t, dir, "t.yaml", `
name: w
artifact: a.bin
workerCommand: "{code_dir}/artifact --port {port}"
config:
  topology.workers: 2
  topology.debug: false
  keep: x
spouts:
  - id: s
bolts:
  - id: b
    parallelism: 2
  - id: c
    parallelism: 3
`)
	base := &nimbusv1.TopologySpec{
		Name:       "w",
		NumWorkers: 2,
		Components: []*nimbusv1.ComponentSpec{
			{Id: "s", Parallelism: 1, Kind: spout}, {Id: "b", Parallelism: 2, Kind: bolt}, {Id: "c", Parallelism: 3, Kind: bolt},
		},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
		Config:        map[string]string{"topology.debug": "false", "keep": "x"},
		InitialStatus: nimbusv1.InitialStatus_INITIAL_STATUS_ACTIVE,
		Owner:         "alice",
		ArtifactBytes: 1,
	}
	all := proto.CloneOf(base)
	all.Name = "v"
	all.NumWorkers = 5
	all.Components[2].Parallelism = 7
	all.WorkerCommand = []string{"run", "{port}"}
	all.Config = map[string]string{"topology.debug": "true", "keep": "x", "new": "1"}
	all.InitialStatus = nimbusv1.InitialStatus_INITIAL_STATUS_INACTIVE
	all.Owner = "carol"
	all.ArtifactBytes = 10
	confWorkers := proto.CloneOf(base)
	confWorkers.NumWorkers = 4
	bothWorkers := proto.CloneOf(base)
	bothWorkers.NumWorkers = 6

	submit := func(args ...string) {
		t.Helper()
		runOK(t, append([]string{"--seeds", addr, "submit", "-f", file}, args...)...)
	}
	submit()
	checkArtifact(t, f, []byte("a"))
	submit(other, "--name", "v", "--workers", "5", "--conf", "topology.debug=true", "--conf", "new=1",
		"--component", "c=7", "--worker-command", "run {port}", "--inactive", "--owner", "carol")
	checkArtifact(t, f, otherBytes) // ARTIFACT overrides artifact
	submit("--conf", "topology.workers=4")
	submit("--conf", "topology.workers=4", "--workers", "6") // --workers wins
	checkRequests(t, f, base, all, confWorkers, bothWorkers)
}

func TestRunSubmitFileErrors(t *testing.T) {
	addr, f := submitLeader(t, submitted)
	artifact, _ := writeArtifact(t, 10)
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "name: w\nartifact: "+artifact+"\nspouts: [{id: s}]\nbolts: [{id: b}]\n")
	file := func(name, text string) string { return writeFile(t, dir, name, text) }
	for _, tc := range []struct {
		args []string
		code int
		want string // the whole line
	}{
		{
			[]string{"-f", good, "w", artifact}, exitUsage,
			`submit -f FILE takes at most ARTIFACT (the name is the file's, or --name), got an extra argument "` + artifact + `"`,
		},
		{[]string{"w", artifact, "--component", "s=1", "--name", "v"}, exitUsage, "--name is for -f: without it, NAME is the first argument"},
		{
			[]string{"-f", filepath.Join(dir, "nope.yaml")}, exitError,
			"submit: topology file: open " + filepath.Join(dir, "nope.yaml") + ": no such file or directory",
		},
		{
			[]string{"-f", file("syntax.yaml", "name: w\nspouts:\n  - id: s\n    parallelism: two\n")}, exitUsage,
			dir + `/syntax.yaml:4: spouts[0].parallelism: want a whole number from 1 to 2147483647, got "two"`,
		},
		{[]string{"-f", file("noname.yaml", "spouts: [{id: s}]\n"), artifact}, exitUsage, dir + "/noname.yaml: name: missing (or give --name)"},
		{
			[]string{"-f", file("noartifact.yaml", "name: w\nspouts: [{id: s}]\n")}, exitUsage,
			"submit -f " + dir + "/noartifact.yaml: no artifact: give ARTIFACT, or artifact in the file",
		},
		{
			[]string{"-f", good, "--component", "x=3"}, exitUsage,
			`--component "x=3": ` + good + ` has no component "x" (it has s, b)`,
		},
		{
			[]string{"-f", good, "--conf", "topology.workers=abc"}, exitUsage,
			`--conf "topology.workers=abc": want a whole number from 1 to 2147483647`,
		},
		// What the leader would refuse, refused where it was written.
		{
			[]string{"-f", file("prot.yaml", "name: w\nspouts: [{id: s}]\n\nworkerCommand: '{code_dir}/artifact --port {prot}'\n"), artifact}, exitUsage,
			dir + `/prot.yaml:4: workerCommand: unknown placeholder "{prot}" in "{prot}": the placeholders are {code_dir}, {port}, {topology_id}`,
		},
		{
			[]string{"-f", file("protlist.yaml", "name: w\nspouts: [{id: s}]\nworkerCommand:\n  - '{code_dir}/artifact'\n  - --port={prot}\n"), artifact}, exitUsage,
			dir + `/protlist.yaml:5: workerCommand[1]: unknown placeholder "{prot}" in "--port={prot}": the placeholders are {code_dir}, {port}, {topology_id}`,
		},
		{
			[]string{"-f", file("badname.yaml", "name: bad/name\nspouts: [{id: s}]\n"), artifact}, exitUsage,
			dir + `/badname.yaml:1: name: must match [A-Za-z0-9_.-]{1,128} and not contain "..", got "bad/name"`,
		},
		{
			[]string{"-f", file("big.yaml", "name: w\nspouts:\n  - id: s\n  - id: t\n    parallelism: 20000\n"), artifact}, exitUsage,
			dir + "/big.yaml:5: spouts[1].parallelism: must be between 1 and 10000, got 20000",
		},
		{
			[]string{"-f", file("badid.yaml", "name: w\nbolts:\n  - id: a/b\n"), artifact}, exitUsage,
			dir + `/badid.yaml:3: bolts[0].id: must match [A-Za-z0-9_.:-]{1,128}, got "a/b"`,
		},
		{
			[]string{"-f", file("workers.yaml", "name: w\nspouts: [{id: s}]\nconfig:\n  topology.workers: 20000\n"), artifact}, exitUsage,
			dir + "/workers.yaml:4: config.topology.workers: must be between 1 and 10000, got 20000",
		},
		{
			[]string{"-f", file("env.yaml", "name: w\nspouts: [{id: s}]\nconfig:\n  x: 1\n  topology.environment: STORM_X=1\n"), artifact}, exitUsage,
			dir + "/env.yaml:5: config.topology.environment: ",
		},
		{[]string{"-f", good, "--component", "b=20000"}, exitUsage, `--component "b=20000": must be between 1 and 10000, got 20000`},
		{[]string{"-f", good, "--workers", "20000"}, exitUsage, `--workers 20000: must be between 1 and 10000, got 20000`},
		{[]string{"-f", good, "--name", "a..b"}, exitUsage, `--name: must match [A-Za-z0-9_.-]{1,128} and not contain "..", got "a..b"`},
		{
			[]string{"-f", good, "--worker-command", "run {prot}"}, exitUsage,
			`--worker-command "run {prot}": unknown placeholder "{prot}" in "{prot}": the placeholders are {code_dir}, {port}, {topology_id}`,
		},
		{
			[]string{"w", artifact, "--component", "s=1", "--worker-command", "{code_dir}/artifact --port {prot}"}, exitUsage,
			`--worker-command "{code_dir}/artifact --port {prot}": unknown placeholder "{prot}" in "{prot}": the placeholders are {code_dir}, {port}, {topology_id}`,
		},
	} {
		stderr := runFails(t, tc.code, append([]string{"--seeds", addr, "submit"}, tc.args...)...)
		line := strings.TrimSuffix(strings.TrimPrefix(stderr, "stormctl: "), "\n")
		line = strings.TrimSuffix(line, " (see 'stormctl --help')")
		if strings.HasSuffix(tc.want, ": ") && strings.HasPrefix(line, tc.want) {
			continue // the reason is validate's own words
		}
		if line != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.args, line, tc.want)
		}
	}
	if n := len(f.Requests(leaderOnly...)); n != 0 {
		t.Errorf("the leader got %d submissions, want none: bad input is refused before anything is sent", n)
	}
}
