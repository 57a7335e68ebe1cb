package workerproto

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestMetricsRoundTrip(t *testing.T) {
	m := Metrics{TakenUnixMs: 2000, StartedUnixMs: 1000, Streams: []StreamCounts{
		{Component: "sentence", Stream: "default", Kind: KindSpout, Executors: 1, Emitted: 10, Transferred: 10, Acked: 9, Failed: 1, CompleteLatencyUs: 900},
		{Component: "split", Source: "sentence", Stream: "default", Kind: KindBolt, Executors: 2, Executed: 9, ExecuteLatencyUs: 90},
		{Component: "split", Source: "words", Stream: "default", Kind: KindBolt, Executors: 2, Executed: 4},
		{Component: "split", Stream: "default", Kind: KindBolt, Executors: 2, Emitted: 40},
	}}
	b, err := EncodeMetrics(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != MetricsVersion || !slices.Equal(got.Streams, m.Streams) {
		t.Fatalf("round trip: %+v", got)
	}
	if strings.Count(string(b), `"source"`) != 2 {
		t.Fatalf("a row without a source must leave the field out: %s", b)
	}
	if n := got.Streams[0].Traffic(); n != 30 {
		t.Fatalf("Traffic() = %d, want 30", n)
	}
}

func TestParseMetricsRefusesBadFiles(t *testing.T) {
	row := func(extra string) string {
		return `{"version":1,"started_unix_ms":1,"streams":[{"component":"c","stream":"s","kind":"bolt"` + extra + `}]}`
	}
	for _, tc := range []struct{ in, want string }{
		{``, "EOF"},
		{`[]`, "cannot unmarshal"},
		{`{"version":2}`, "version 2, want 1"},
		{`{"streams":[]}`, "version 0"},
		{`{"version":1,"taken_unix_ms":-1}`, "must not be negative"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"stream":"s","kind":"bolt"}]}`, "streams[0].component: empty"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"c","kind":"bolt"}]}`, "streams[0].stream: empty"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"c","stream":"s"}]}`, `streams[0].kind ""`},
		{row(`,"emitted":-1`), "cannot unmarshal number -1"},
		{row(`,"executors":-2`), "executors -2 is negative"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"c","stream":"s","kind":"bolt"},{"component":"c","stream":"s","kind":"bolt"}]}`, "appears twice"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"c","source":"a","stream":"s","kind":"bolt"},{"component":"c","source":"a","stream":"s","kind":"bolt"}]}`, "appears twice"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"c","source":"a\u0001","stream":"s","kind":"bolt"}]}`, "streams[0].source"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"c\u0001","stream":"s","kind":"bolt"}]}`, "control character"},
		{`{"version":1,"started_unix_ms":1,"streams":[{"component":"` + strings.Repeat("x", 300) + `","stream":"s","kind":"bolt"}]}`, "more than 256"},
		{`{"version":1,"started_unix_ms":1} {"version":1}`, "more than one JSON value"},
		{`{"version":1,"taken_unix_ms":5}`, "started_unix_ms 0, want the run's start"},
		{`{"version":1,"started_unix_ms":0,"streams":[]}`, "started_unix_ms 0, want the run's start"},
		{strings.Repeat(" ", MaxMetricsBytes+1), "more than"},
	} {
		_, err := ParseMetrics([]byte(tc.in))
		if !errors.Is(err, ErrBadMetrics) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseMetrics(%.60q): %v, want ErrBadMetrics saying %q", tc.in, err, tc.want)
		}
	}
	// Unknown fields are a later version's additions, not errors.
	if _, err := ParseMetrics([]byte(row(`,"capacity":0.5`))); err != nil {
		t.Errorf("unknown field refused: %v", err)
	}
	if _, err := EncodeMetrics(Metrics{Streams: []StreamCounts{{Component: "c", Stream: "s", Kind: "sink"}}}); !errors.Is(err, ErrBadMetrics) {
		t.Errorf("EncodeMetrics of a bad kind: %v", err)
	}
}

func TestReadFileRefusesWhatCouldHurt(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _, err := ReadFile(small, 5); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, _, err := ReadFile(small, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the limit: %v, want ErrTooLarge", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(link, 100); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a symbolic link: %v, want ELOOP", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(fifo, 100); !errors.Is(err, ErrNotRegular) { // and it did not block
		t.Errorf("a FIFO: %v, want ErrNotRegular", err)
	}
	if _, _, err := ReadFile(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v, want ErrNotRegular", err)
	}
}

func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MetricsFileName)
	for _, content := range []string{"one", "two"} {
		if err := ReplaceFile(path, []byte(content), func(f *os.File) error { return f.Chmod(0o640) }); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("after ReplaceFile: %q, %v", b, err)
		}
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 from prepare", fi.Mode().Perm())
	}
	if err := ReplaceFile(path, []byte("three"), func(*os.File) error { return errors.New("no") }); err == nil {
		t.Error("a failed prepare replaced the file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestWorkerWritesMetrics(t *testing.T) {
	w := Worker{MetricsFile: filepath.Join(t.TempDir(), MetricsFileName)}
	m := Metrics{StartedUnixMs: 1, TakenUnixMs: 2, Streams: []StreamCounts{{Component: "c", Stream: "s", Kind: KindSpout, Emitted: 3}}}
	if err := w.WriteMetrics(m); err != nil {
		t.Fatal(err)
	}
	b, _, err := ReadFile(w.MetricsFile, MaxMetricsBytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseMetrics(b)
	if err != nil || got.Streams[0].Emitted != 3 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := (Worker{}).WriteMetrics(m); err != nil {
		t.Errorf("without a metrics file: %v", err)
	}
}
