package chaos_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/internal/version"
)

// restartWatch follows every worker process on the run's supervisors
// through a roll. It samples them (/proc) with the assignments placing
// them every sampleEvery and at each step's start and end, and takes as a
// restart each worker that stopped while the assignment placing it had
// stood for settled and still stood: a stop no scheduling asked for. A
// restart is explained only during the restart of its own supervisor at a
// cluster version that does not let a stopping supervisor leave its
// workers (version.KeepWorkersOnStop: below 0.2 it stops them, since a 0.1
// successor adopts nothing); any other is a violation.
type restartWatch struct {
	r *run

	mu     sync.Mutex
	last   map[int]placedWorker // by port, as last sampled
	lastAt time.Time
	step   *rollStep // the step under way; nil between steps
}

// sampleEvery is how often restartWatch looks between steps' own looks.
const sampleEvery = 500 * time.Millisecond

// placedWorker is a worker process and the assignment write placing it
// (zero if none does).
type placedWorker struct {
	sup *daemon
	worker
	placed written
}

func newRestartWatch(r *run) *restartWatch {
	return &restartWatch{r: r}
}

// run samples until ctx ends.
func (w *restartWatch) run(ctx context.Context) {
	for {
		w.sample()
		select {
		case <-ctx.Done():
			return
		case <-time.After(sampleEvery):
		}
	}
}

// begin attributes the restarts seen from now on to st.
func (w *restartWatch) begin(st *rollStep) {
	w.sample()
	w.mu.Lock()
	w.step = st
	w.mu.Unlock()
}

// end looks once more and ends the step.
func (w *restartWatch) end() {
	w.sample()
	w.mu.Lock()
	w.step = nil
	w.mu.Unlock()
}

// sample compares every worker now with the last sample. Assignments that
// cannot be read leave the last sample standing, to compare with the next.
func (w *restartWatch) sample() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	cur := map[int]placedWorker{}
	assigned := map[*daemon]map[string]written{}
	for _, d := range w.r.sups {
		slots := w.r.assignedSlots(d.proc().ID())
		if slots == nil {
			return
		}
		assigned[d] = slots
		for port, wk := range w.r.workersOf(d) {
			cur[port] = placedWorker{sup: d, worker: wk, placed: slots[slotKey(wk.topology, port)]}
		}
	}
	for port, was := range w.last {
		if was.placed == (written{}) || w.lastAt.Sub(was.placed.mtime) < settled {
			continue // not placed, or placed a moment ago: the supervisor may not have acted on it yet
		}
		if assigned[was.sup][slotKey(was.topology, port)] != was.placed {
			continue // placed anew since: stopped on purpose, maybe
		}
		if now, ok := cur[port]; ok && now.pid == was.pid {
			continue
		}
		w.restarted(port, was)
	}
	w.last, w.lastAt = cur, now
}

// restarted reports a worker's stop unless the step under way explains
// it. w.mu is held.
func (w *restartWatch) restarted(port int, was placedWorker) {
	st := w.step
	if st != nil && st.d == was.sup && !version.KeepWorkersOnStop.Enabled(st.version) {
		w.r.t.Logf("roll: %s's worker of %s on port %d (pid %d) stopped with it (cluster version %s)",
			was.sup.name, was.topology, port, was.pid, st.version)
		return
	}
	during := "between steps"
	if st != nil {
		during = fmt.Sprintf("during %s's restart (cluster version %s)", st.d.name, st.version)
	}
	w.r.violation("%s's worker of %s on port %d (pid %d) stopped %s, though the assignment placing it, written at %s, stood",
		was.sup.name, was.topology, port, was.pid, during, was.placed.mtime.Format("15:04:05.000"))
}
