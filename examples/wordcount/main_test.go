package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestIsSpout(t *testing.T) {
	for name, want := range map[string]bool{
		"sentence": true, "spout": true, "RandomSentenceSpout": true, "kafka-spout": true,
		"split": false, "count": false, "bolt": false,
	} {
		if got := isSpout(name); got != want {
			t.Errorf("isSpout(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCounter(t *testing.T) {
	c := newCounter(rand.New(rand.NewPCG(1, 2)), nil)
	if tuples, words := c.tick(0); tuples != 0 || words != 0 {
		t.Fatalf("tick(0) = %d, %d; want nothing", tuples, words)
	}
	tuples, words := c.tick(3)
	if tuples < 3 || tuples > 3*maxSentencesPerTick || words < tuples {
		t.Fatalf("tick(3) = %d tuples, %d words", tuples, words)
	}
	var sum int64
	for _, n := range c.counts {
		sum += n
	}
	if sum != int64(words) || c.tuples != int64(tuples) || c.words != int64(words) {
		t.Fatalf("counts sum to %d, totals %d tuples %d words; tick said %d, %d", sum, c.tuples, c.words, tuples, words)
	}
	if w, n := c.top(); n < 1 || c.counts[w] != n {
		t.Fatalf("top() = %q, %d", w, n)
	}
}

// fakeEnv is a worker's environment as a supervisor sets it.
func fakeEnv(overrides map[string]string) func(string) string {
	env := map[string]string{
		EnvTopologyID: "wordcount-1-1700000000",
		EnvPort:       "0", // any free port; the start line says which
		EnvExecutors:  "sentence[1-1],split[2-3],count[4-6]",
		EnvCodeDir:    "/var/storm/supervisor/stormdist/wordcount-1-1700000000",
	}
	for k, v := range overrides {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

func TestRunRejectsBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no port", nil, map[string]string{EnvPort: ""}, "no port: pass --port or set STORM_PORT"},
		{"port not a number", nil, map[string]string{EnvPort: "67OO"}, `STORM_PORT="67OO": not a number`},
		{"port out of range", nil, map[string]string{EnvPort: "70000"}, `STORM_PORT="70000": must be between 0 and 65535`},
		{"flag out of range", []string{"--port", "-1"}, nil, "--port -1: must be between 0 and 65535"},
		{"no topology id", nil, map[string]string{EnvTopologyID: ""}, "STORM_TOPOLOGY_ID is not set"},
		{"topology id with a space", nil, map[string]string{EnvTopologyID: "a b"}, `STORM_TOPOLOGY_ID="a b"`},
		{"no executors", nil, map[string]string{EnvExecutors: ""}, "STORM_EXECUTORS is not set"},
		{"bad executors", nil, map[string]string{EnvExecutors: "split[3-2]"}, `STORM_EXECUTORS="split[3-2]": entry 1 "split[3-2]": end 2 is before start 3`},
		{"extra argument", []string{"--port", "0", "extra"}, nil, `unexpected arguments ["extra"]`},
		{"unknown flag", []string{"--workers", "2"}, nil, "flag provided but not defined: -workers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runContext(t.Context(), tc.args, fakeEnv(tc.env), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := runContext(t.Context(), []string{"--help"}, fakeEnv(nil), &stdout, &stderr); code != exitOK {
			t.Errorf("exit code %d, want %d", code, exitOK)
		}
		if !strings.Contains(stderr.String(), "-port") || !strings.Contains(stderr.String(), EnvExecutors) {
			t.Errorf("usage %q does not mention --port and %s", stderr.String(), EnvExecutors)
		}
	})
}

func TestRunInProcess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	stdout, stderr := newLineLog(), newLineLog()
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, nil, fakeEnv(nil), stdout, stderr) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	start := stdout.waitFor(t, 10*time.Second, `msg="worker started"`)
	for _, want := range []string{
		"topology_id=wordcount-1-1700000000", "executors=sentence[1-1],split[2-3],count[4-6]", "spouts=1",
		"code_dir=/var/storm/supervisor/stormdist/wordcount-1-1700000000", "pid=" + strconv.Itoa(os.Getpid()),
	} {
		if !strings.Contains(start, want) {
			t.Errorf("start line %q lacks %s", start, want)
		}
	}
	port := portOf(t, start)
	if got, want := query(t, port), "wordcount wordcount-1-1700000000 port="+port+" executors=3 status=active tuples="; !strings.HasPrefix(got, want) {
		t.Errorf("port query answered %q, want %q", got, want)
	}

	// A second worker on the same slot (--port overriding STORM_PORT) cannot bind.
	var out2, err2 bytes.Buffer
	if code := runContext(t.Context(), []string{"--port", port}, fakeEnv(nil), &out2, &err2); code != exitError {
		t.Errorf("second worker on port %s: exit code %d, want %d", port, code, exitError)
	}
	if lines := strings.Split(strings.TrimSuffix(err2.String(), "\n"), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "cannot listen on slot port "+port) || out2.Len() != 0 {
		t.Errorf("second worker: stderr %q, stdout %q; want one line about port %s and no stdout", err2.String(), out2.String(), port)
	}

	processed := stdout.waitFor(t, 10*time.Second, `msg=processed`)
	if n := intAttr(t, processed, "tuples"); n < 1 || n > maxSentencesPerTick {
		t.Errorf("one spout processed %d tuples in a tick, want 1 to %d: %q", n, maxSentencesPerTick, processed)
	}

	cancel()
	select {
	case code := <-done:
		done <- code // for the cleanup
		if code != exitOK {
			t.Errorf("exit code %d after cancel, want %d", code, exitOK)
		}
	case <-time.After(time.Second):
		t.Fatal("worker did not return within a second of its context ending")
	}
	stopping := stdout.waitFor(t, time.Second, `msg="worker stopping"`)
	if n := intAttr(t, stopping, "tuples"); n < 1 {
		t.Errorf("stopping line %q: want the tuple total", stopping)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
		conn.Close()
		t.Errorf("port %s still accepts connections after the worker returned", port)
	}
	if s := stderr.String(); s != "" {
		t.Errorf("stderr: %q", s)
	}
}

// TestBinary runs the worker the way a supervisor does: the built binary as
// {code_dir}/artifact --port {port}, stopped with SIGTERM.
func TestBinary(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed to build the worker: ", err)
	}
	codeDir := t.TempDir()
	artifact := filepath.Join(codeDir, "artifact")
	build := exec.CommandContext(t.Context(), goBin, "build", "-o", artifact, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	stdout, stderr := newLineLog(), newLineLog()
	cmd := exec.Command(artifact, "--port", "0")
	cmd.Env = append(os.Environ(),
		EnvTopologyID+"=wordcount-2-1700000000", EnvPort+"=0",
		EnvExecutors+"=spout[1-2],split[3-3],count[4-5]", EnvCodeDir+"="+codeDir)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	start := stdout.waitFor(t, 10*time.Second, `msg="worker started"`)
	if want := "pid=" + strconv.Itoa(cmd.Process.Pid); !strings.Contains(start, want) {
		t.Errorf("start line %q lacks %s", start, want)
	}
	port := portOf(t, start)
	if got, want := query(t, port), "wordcount wordcount-2-1700000000 port="+port+" executors=3 status=active tuples="; !strings.HasPrefix(got, want) {
		t.Errorf("port query answered %q, want %q", got, want)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Errorf("worker exited with %v after SIGTERM, want exit code 0; stderr %q", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("worker still running 5s after SIGTERM")
	}
	stdout.waitFor(t, time.Second, `msg="worker stopping"`)
}

// lineLog is an io.Writer that keeps the lines written to it, so a test can
// wait for one.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	changed chan struct{} // closed, and replaced, when a line is added
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.lines {
		b.WriteString(line + "\n")
	}
	b.Write(l.partial)
	return b.String()
}

// waitFor returns the first line that contains substr, failing the test if
// there is none within timeout.
func (l *lineLog) waitFor(t *testing.T, timeout time.Duration, substr string) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, substr) {
				l.mu.Unlock()
				return line
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no line with %s within %v; output:\n%s", substr, timeout, l)
		}
	}
}

var portAttr = regexp.MustCompile(`\bport=([0-9]+)\b`)

// portOf returns the port a start line reports.
func portOf(t *testing.T, line string) string {
	t.Helper()
	m := portAttr.FindStringSubmatch(line)
	if m == nil || m[1] == "0" {
		t.Fatalf("start line %q has no port", line)
	}
	return m[1]
}

// intAttr returns the integer value of key in a slog text line.
func intAttr(t *testing.T, line, key string) int {
	t.Helper()
	m := regexp.MustCompile(`\b` + regexp.QuoteMeta(key) + `=([0-9]+)\b`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %q has no %s", line, key)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// query asks the worker on port what it is.
func query(t *testing.T, port string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 5*time.Second)
	if err != nil {
		t.Fatalf("dial worker: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read worker answer: %v", err)
	}
	return string(b)
}
