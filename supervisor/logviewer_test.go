package supervisor

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/nimbusha/nimbus/configs"
)

// A worker being stopped still runs, and its keeper still writes its
// worker.log, until its stop returns: the cap on the workers' logs must
// count it as running until then, or it could delete the log being
// written.
func TestStoppingWorkerCountsAsRunningForTheLogCap(t *testing.T) {
	s := New(configs.Default(), slog.New(slog.DiscardHandler))
	taken, stopped := make(chan struct{}), make(chan struct{})
	w := &worker{spec: workerSpec{TopologyID: "wc-1-1700000000", Port: 6700}, done: make(chan struct{}),
		cancel: func() { close(taken); <-stopped }} // its keeper takes a while to end it
	go func() { <-stopped; close(w.done) }()
	s.workers[6700] = w
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.stopWorkers(func(int32, *worker) bool { return true })
	}()
	<-taken
	if !s.runsHere("wc-1-1700000000", 6700) {
		t.Fatal("a worker being stopped counts as not running: its current log may be deleted")
	}
	close(stopped)
	<-ended
	if s.runsHere("wc-1-1700000000", 6700) {
		t.Fatal("a stopped worker still counts as running")
	}
}

// A worker adopted from an older supervisor wrote its log to
// supervisor/workers/<topology>-<port>.log, which the logviewer cannot
// serve and nothing cleans: its next run writes the logviewer's layout,
// and the old file goes.
func TestAnAdoptedWorkersOldLogGoesAtItsNextRun(t *testing.T) {
	cfg := configs.Default()
	cfg.LocalDir = t.TempDir()
	old := filepath.Join(cfg.LocalDir, "supervisor", "workers", "wc-1-1700000000-6700.log")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("an older supervisor's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &worker{spec: workerSpec{TopologyID: "wc-1-1700000000", Port: 6700, LogPath: old}, policy: launchPolicy{cfg: cfg},
		log: slog.New(slog.DiscardHandler)}
	w.useLogLayout()
	want := filepath.Join(cfg.LocalDir, "workers-artifacts", "wc-1-1700000000", "6700", "worker.log")
	if w.spec.LogPath != want {
		t.Fatalf("log path %s, want %s", w.spec.LogPath, want)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the old log is still there: %v", err)
	}
	// A path that is not an older supervisor's log is not removed.
	other := filepath.Join(cfg.LocalDir, "keep-me.log")
	_ = os.WriteFile(other, nil, 0o644)
	w.spec.LogPath = other
	w.useLogLayout()
	if _, err := os.Stat(other); err != nil || w.spec.LogPath != want {
		t.Fatalf("%s: %v; log path %s", other, err, w.spec.LogPath)
	}
}
