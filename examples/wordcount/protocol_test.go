package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/workerproto"
)

// TestWorkerProtocol runs the worker as a supervisor would, with the
// protocol's files: it reports the --report-error message, pauses its
// spout on inactive (and says so) and resumes on active.
func TestWorkerProtocol(t *testing.T) {
	dir := t.TempDir()
	statusFile, errorFile := filepath.Join(dir, "status"), filepath.Join(dir, "errors")
	setStatus := func(st workerproto.Status) {
		tmp := statusFile + ".tmp"
		if err := os.WriteFile(tmp, st.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, statusFile); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(os.Getpid(), workerproto.StatusSignal); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(workerproto.Active)
	if err := os.WriteFile(errorFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	stdout, stderr := newLineLog(), newLineLog()
	env := fakeEnv(map[string]string{workerproto.EnvStatusFile: statusFile, workerproto.EnvErrorFile: errorFile})
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"--report-error", "bad input\nsecond line"}, env, stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	stdout.waitFor(t, 10*time.Second, "status=active")
	stdout.waitFor(t, 10*time.Second, `msg=processed`)
	b, err := os.ReadFile(errorFile)
	if err != nil || string(b) != "bad input second line\n" {
		t.Fatalf("error file holds %q (%v), want one line", b, err)
	}

	setStatus(workerproto.Inactive)
	paused := stdout.waitFor(t, 10*time.Second, "status=inactive")
	if !strings.Contains(paused, "emitting=false") {
		t.Fatalf("pause acknowledged as %q", paused)
	}
	// The resume's acknowledgement carries the count of the pause: the
	// start's said 0, and nothing was emitted in between.
	n := intAttr(t, paused, "tuples")
	if n == 0 {
		t.Fatalf("paused before any tuple: %q", paused)
	}
	setStatus(workerproto.Active)
	stdout.waitFor(t, 10*time.Second, "status=active emitting=true tuples="+strconv.Itoa(n))
}

// TestCountsReported runs the worker with a metrics file and stops it: the
// counters it wrote last are the totals it logged, in Storm's terms.
func TestCountsReported(t *testing.T) {
	metricsFile := filepath.Join(t.TempDir(), workerproto.MetricsFileName)
	ctx, cancel := context.WithCancel(t.Context())
	stdout, stderr := newLineLog(), newLineLog()
	env := fakeEnv(map[string]string{workerproto.EnvMetricsFile: metricsFile})
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, nil, env, stdout, stderr) }()
	stdout.waitFor(t, 10*time.Second, `msg=processed`)
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	stopping := stdout.waitFor(t, time.Second, `msg="worker stopping"`)
	tuples, words := uint64(intAttr(t, stopping, "tuples")), uint64(intAttr(t, stopping, "words"))

	b, _, err := workerproto.ReadFile(metricsFile, workerproto.MaxMetricsBytes)
	if err != nil {
		t.Fatal(err)
	}
	m, err := workerproto.ParseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]workerproto.StreamCounts{}
	for _, s := range m.Streams {
		rows[s.Component+"<-"+s.Source] = s
	}
	spout, split, splitIn, countIn := rows["sentence<-"], rows["split<-"], rows["split<-sentence"], rows["count<-split"]
	if spout.Kind != workerproto.KindSpout || spout.Emitted != tuples || spout.Transferred != tuples || spout.Acked != tuples || spout.Executors != 1 {
		t.Errorf("sentence row %+v, want %d emitted, transferred and acked", spout, tuples)
	}
	if split.Kind != workerproto.KindBolt || split.Emitted != words || split.Executed != 0 || split.Executors != 1 {
		t.Errorf("split's output row %+v, want %d emitted, nothing executed", split, words)
	}
	if splitIn.Kind != workerproto.KindBolt || splitIn.Executed != tuples || splitIn.Acked != tuples || splitIn.Executors != 1 {
		t.Errorf("split's input row from sentence %+v, want %d executed and acked", splitIn, tuples)
	}
	if countIn.Executed != words || countIn.Acked != words || countIn.Executors != 1 {
		t.Errorf("count's input row from split %+v, want %d executed and acked", countIn, words)
	}
	if tuples == 0 {
		t.Error("nothing counted")
	}
}
