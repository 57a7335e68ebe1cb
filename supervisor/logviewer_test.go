package supervisor

import (
	"log/slog"
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
