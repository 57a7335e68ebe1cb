package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/logviewer"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestLogsOptionsNameTheBadFlag(t *testing.T) {
	for _, tc := range []struct {
		o    logsOptions
		flag string
	}{
		{logsOptions{grep: "(", every: 1}, "--grep: "},
		{logsOptions{grep: strings.Repeat("a", maxGrepLen+1), every: 1}, "--grep: "},
		{logsOptions{worker: "host", every: 1}, "--worker: "},
		{logsOptions{bytes: -1, every: 1}, "--bytes: "},
		{logsOptions{}, "--interval: "},
	} {
		if err := tc.o.check(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.flag)
		}
	}
}

func TestPickWorkers(t *testing.T) {
	info := &nimbusv1.GetTopologyInfoResponse{Workers: []*nimbusv1.WorkerSummary{
		{Host: "h1", Port: 6700}, {Host: "h2", Port: 6701},
	}}
	if ws, err := pickWorkers(info, ""); err != nil || len(ws) != 2 {
		t.Fatalf("all: %v %v", ws, err)
	}
	if ws, err := pickWorkers(info, "h2:6701"); err != nil || len(ws) != 1 || ws[0].GetHost() != "h2" {
		t.Fatalf("h2:6701: %v %v", ws, err)
	}
	if _, err := pickWorkers(info, "h3:6700"); err == nil || !strings.Contains(err.Error(), "its workers: h1:6700, h2:6701") {
		t.Fatalf("unknown worker: %v", err)
	}
}

// Whole lines only, filtered, prefixed; a line without its end waits.
func TestLogTailEmitsWholeMatchingLines(t *testing.T) {
	var out bytes.Buffer
	tl := &logTail{out: &out, prefix: "h:1 | "}
	tl.re, _ = compileForTest("ERR")
	tl.partial = []byte("ok 1\nERR 2\nERR par")
	tl.emit()
	if out.String() != "h:1 | ERR 2\n" || string(tl.partial) != "ERR par" {
		t.Fatalf("out %q, partial %q", out.String(), tl.partial)
	}
	tl.flush()
	if out.String() != "h:1 | ERR 2\nh:1 | ERR par\n" {
		t.Fatalf("after flush %q", out.String())
	}
}

func compileForTest(re string) (*regexp.Regexp, error) {
	o := logsOptions{grep: re, every: 1}
	err := o.check()
	return o.re, err
}

// logviewerOf serves a real logviewer over a worker's directory holding
// worker.log (content); it returns the worker's log link, the directory,
// and the count of /log requests it has answered.
func logviewerOf(t *testing.T, content string) (string, string, *atomic.Int64) {
	t.Helper()
	const topo = "wordcount-1-1700000000"
	root := filepath.Join(t.TempDir(), logviewer.ArtifactsDir)
	dir, err := logviewer.Prepare(root, 6700, logviewer.Meta{TopologyID: topo, Owner: "olive"}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "worker.log"), []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	authz, err := auth.New(configs.Default(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	lv := logviewer.New(logviewer.Config{Root: root, Authz: authz, Log: slog.New(slog.DiscardHandler)})
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		lv.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/log?file=" + url.QueryEscape(topo+"/6700/worker.log"), dir, &reads
}

// rotate does what a worker's keeper does: worker.log.i becomes .i+1,
// worker.log .1, and a new worker.log starts with next.
func rotate(t *testing.T, dir, next string) {
	t.Helper()
	for i := 8; i >= 1; i-- {
		_ = os.Rename(filepath.Join(dir, fmt.Sprintf("worker.log.%d", i)), filepath.Join(dir, fmt.Sprintf("worker.log.%d", i+1)))
	}
	if err := os.Rename(filepath.Join(dir, "worker.log"), filepath.Join(dir, "worker.log.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "worker.log"), []byte(next), 0o640); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func followed(t *testing.T, link string) (*logTail, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	tl := &logTail{lv: &logviewerClient{http: &http.Client{}}, link: link, out: &out}
	if err := tl.start(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	return tl, &out
}

// A rotation is seen by the file's identity, not by its size: a new
// worker.log that grew past the old offset before the next look is read
// from its start, after the rest of the old one.
func TestFollowSeesARotationWhoseNewLogOutgrewTheOffset(t *testing.T) {
	link, dir, _ := logviewerOf(t, "old 1\nold 2\n")
	tl, out := followed(t, link)
	appendTo(t, filepath.Join(dir, "worker.log"), "old 3\n")
	rotate(t, dir, "new 1 a longer line than the old file was\nnew 2\n")
	if err := tl.more(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "old 1\nold 2\nold 3\nnew 1 a longer line than the old file was\nnew 2\n"
	if out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out, want)
	}
}

// Rotated twice between two looks: the old log is found where it went
// (worker.log.2), its rest read, then worker.log.1 whole, then the new
// worker.log; a log deleted before it was read is said, not skipped in
// silence.
func TestFollowFindsTheOldLogWhereverItWent(t *testing.T) {
	link, dir, _ := logviewerOf(t, "a 1\n")
	tl, out := followed(t, link)
	appendTo(t, filepath.Join(dir, "worker.log"), "a 2\n")
	rotate(t, dir, "b 1\n")
	rotate(t, dir, "c 1\n")
	if err := tl.more(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "a 1\na 2\nb 1\nc 1\n"; out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out, want)
	}
	// Now its file goes before the next look: worker.log.1 (c) and .2
	// (b) are deleted, as the cap on all logs deletes the oldest.
	appendTo(t, filepath.Join(dir, "worker.log"), "c 2\n")
	rotate(t, dir, "d 1\n")
	rotate(t, dir, "e 1\n")
	for _, n := range []string{"worker.log.3", "worker.log.4", "worker.log.2"} {
		_ = os.Remove(filepath.Join(dir, n))
	}
	out.Reset()
	if err := tl.more(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "lines are missing") || !strings.HasSuffix(got, "d 1\ne 1\n") {
		t.Fatalf("printed\n%s\nwant a gap said, then d 1 and e 1", got)
	}
}

// A line longer than a page, and longer than what a line scanner takes,
// does not stop the lines after it.
func TestEveryLineAfterAVeryLongOneIsPrinted(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	link, _, _ := logviewerOf(t, "before\n"+long+"\nafter 1\nafter 2\n")
	_, out := followed(t, link)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) < 4 || lines[0] != "before" || lines[len(lines)-2] != "after 1" || lines[len(lines)-1] != "after 2" {
		t.Fatalf("%d lines: first %.20q, last %q", len(lines), lines[0], lines[max(len(lines)-2, 0):])
	}
	if joined := strings.Join(lines[1:len(lines)-2], ""); joined != long {
		t.Fatalf("the long line printed as %d bytes, want %d", len(joined), len(long))
	}
}

// --bytes 0 prints the whole log as it reads it, page by page, not after
// holding all of it.
func TestWholeLogPrintsAsItIsRead(t *testing.T) {
	var log strings.Builder
	for i := 0; log.Len() < 4<<20; i++ {
		fmt.Fprintf(&log, "line %d\n", i)
	}
	link, _, reads := logviewerOf(t, log.String())
	firstWrite := int64(-1)
	out := writerFunc(func(p []byte) (int, error) {
		if firstWrite < 0 {
			firstWrite = reads.Load()
		}
		return len(p), nil
	})
	tl := &logTail{lv: &logviewerClient{http: &http.Client{}}, link: link, out: out}
	if err := tl.start(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if total := reads.Load(); firstWrite < 0 || firstWrite >= total {
		t.Fatalf("first line printed after %d of %d reads: the whole log was held first", firstWrite, total)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
