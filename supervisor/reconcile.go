package supervisor

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// reconcileLoop makes the running workers match the assignments: it
// fetches missing code, stops workers whose slot changed hands or
// executors, starts the missing ones, and removes the code of topologies
// that no longer live. When it returns (the supervisor closing) it leaves
// every worker to its keeper, for the next supervisor to adopt, unless the
// cluster version says that supervisor may not adopt them (leaveWorkers).
func (s *Supervisor) reconcileLoop(ctx context.Context) {
	// Act only on loaded assignments: an empty first read would delete
	// every bundle and start nothing. The statuses too: a worker starts
	// with its topology's.
	for _, loaded := range []<-chan struct{}{s.assignments.Loaded(), s.storms.Loaded(), s.versions.Loaded(), s.blobMetas.Loaded()} {
		select {
		case <-loaded:
		case <-ctx.Done():
			return
		}
	}
	f := &fetches{s: s, ctx: ctx, running: map[string]context.CancelFunc{}, done: make(chan string, 16)}
	defer func() {
		f.stopAll()
		s.leaveWorkers()
	}()
	tick := time.NewTicker(resync)
	defer tick.Stop()
	var outage outageLog
	gone := goneTopologies{}
	for {
		// Taken before what they announce is read: no change goes unseen.
		assigned, reported, statuses := s.assignments.Changed(), s.store.Reported(), s.storms.Changed()
		versions, blobs := s.versions.Changed(), s.blobMetas.Changed()
		if outage.note(s.log, s.identity()) {
			// The assignments read are not this cluster's (the root was
			// wiped): keep every worker and all code as they are. Graces
			// that began as the root went start again once it is back:
			// the assignments may reload after the node that ends the
			// outage.
			clear(gone)
			select {
			case <-ctx.Done():
				return
			case <-versions:
			case <-tick.C:
			}
			continue
		}
		desired := s.desired()
		ready := f.fetchMissing(desired) // a worker starts only from verified code
		gone.forgetAssigned(s.assignments.Snapshot())
		s.stopMismatched(desired, gone)
		s.restartAsked(desired)
		s.applyStatuses()
		s.startMissing(ctx, desired, ready)
		levelsDue := s.applyLogLevels()
		s.applyBlobs()
		s.removeDeadCode(desired, gone)

		due := gone.nextDue()
		if !levelsDue.IsZero() && (due.IsZero() || levelsDue.Before(due)) {
			due = levelsDue // a log level's timeout ends
		}
		var dueC <-chan time.Time
		if !due.IsZero() {
			dueC = time.After(time.Until(due))
		}
		select {
		case <-ctx.Done():
			return
		case <-dueC: // a topology has been gone for the grace, or a log level ends
		case <-assigned:
		case <-versions:
		case <-statuses: // activate, deactivate, kill: tell the workers
		case <-blobs: // a blob updated: place its new version
		case <-reported: // a copy found corrupt: verify it again
		case <-s.wake:
		case <-tick.C:
		case id := <-f.done: // done or given up: the next pass decides again
			f.stop(id)
		}
	}
}

// fetches are the code fetches under way, by topology.
type fetches struct {
	s       *Supervisor
	ctx     context.Context
	wg      sync.WaitGroup
	running map[string]context.CancelFunc
	done    chan string // a fetch ended
}

// fetchMissing reports which desired topologies' code is held, verified,
// and fetches the code of the others; fetches of code no longer desired
// or held now stop.
func (f *fetches) fetchMissing(desired map[int32]desiredWorker) map[string]bool {
	ready := map[string]bool{}
	for _, d := range desired {
		if _, seen := ready[d.topologyID]; seen {
			continue
		}
		ready[d.topologyID] = f.s.store.Verify(d.topologyID, d.digest) == nil
		if !ready[d.topologyID] && f.running[d.topologyID] == nil {
			f.start(d.topologyID, d.digest)
		}
	}
	for id := range f.running {
		if ready[id] || !wanted(desired, id) {
			f.stop(id)
		}
	}
	return ready
}

func (f *fetches) start(id string, digest []byte) {
	ctx, cancel := context.WithCancel(f.ctx)
	f.running[id] = cancel
	f.wg.Go(func() {
		f.s.fetch(ctx, id, digest)
		select {
		case f.done <- id:
		case <-f.ctx.Done():
		}
	})
}

func (f *fetches) stop(id string) {
	if cancel := f.running[id]; cancel != nil {
		cancel()
		delete(f.running, id)
	}
}

// stopAll stops every fetch and waits for them.
func (f *fetches) stopAll() {
	for id := range f.running {
		f.stop(id)
	}
	f.wg.Wait()
}

// stopMismatched stops, all at once (each takes up to the grace period),
// the workers whose slot no longer runs what the assignments ask.
func (s *Supervisor) stopMismatched(desired map[int32]desiredWorker, gone goneTopologies) {
	s.stopWorkers(func(port int32, w *worker) bool {
		d, ok := desired[port]
		if ok && d.topologyID == w.spec.TopologyID && d.executors == w.spec.Executors {
			return false
		}
		// Moved or changed: stop it now. A worker whose topology has no
		// assignment at all waits the grace: the root may be going.
		return ok || s.assignments.Snapshot()[w.spec.TopologyID] != nil || !gone.waiting(w.spec.TopologyID)
	})
}

// vanishGrace is how long a topology's assignment must stay gone before
// the workers it placed here stop and its code is removed. Deleting the
// root (deleteall) removes the assignments before the node that names the
// cluster, so for a moment a wiped root looks like a cluster whose
// topologies were all killed; by the grace's end the outage shows
// (package clusterid) and nothing is stopped. A killed topology's workers
// stop this much later.
const vanishGrace = 2 * time.Second

// goneTopologies remembers since when each topology that has a worker or
// code here has had no assignment.
type goneTopologies map[string]time.Time

// forgetAssigned forgets the topologies that have an assignment again.
func (g goneTopologies) forgetAssigned(assignments map[string]*clusterv1.Assignment) {
	for id := range g {
		if assignments[id] != nil {
			delete(g, id)
		}
	}
}

// nextDue is when the next grace still running ends; zero if none is.
func (g goneTopologies) nextDue() (due time.Time) {
	now := time.Now()
	for _, since := range g {
		if end := since.Add(vanishGrace); now.Before(end) && (due.IsZero() || end.Before(due)) {
			due = end
		}
	}
	return due
}

// waiting reports whether topology id, which has no assignment, is still
// within its grace; the first call for it starts the grace.
func (g goneTopologies) waiting(id string) bool {
	since, ok := g[id]
	if !ok {
		g[id] = time.Now()
		return true
	}
	return time.Since(since) < vanishGrace
}

// startMissing starts a worker on every desired slot that runs none and
// whose code and blobs are ready.
func (s *Supervisor) startMissing(ctx context.Context, desired map[int32]desiredWorker, ready map[string]bool) {
	waiting := map[int32]*clusterv1.WorkerState{} // for their blobs
	defer func() {
		s.mu.Lock()
		s.blobWaits = waiting
		s.mu.Unlock()
	}()
	for port, d := range desired {
		s.mu.Lock()
		_, running := s.workers[port]
		s.mu.Unlock()
		if running || !ready[d.topologyID] {
			continue
		}
		spec, err := s.workerSpecFor(port, d)
		if err != nil {
			s.log.Error("cannot start worker", "topology", d.topologyID, "port", port, "err", err)
			continue
		}
		blobs, ok := s.blobsReady(port, spec, waiting)
		if !ok {
			continue
		}
		status, ok := s.topologyStatus(d.topologyID)
		if !ok {
			status = workerproto.Active // not in /storms (yet): as submitted by default
		}
		w := startWorker(s.wctx, spec, status, newLaunchPolicy(s.cfg), s.keepers, s.cfg.WorkerShutdownSleep, s.log, s.heartbeatSoon, blobs)
		s.mu.Lock()
		s.workers[port] = w
		s.mu.Unlock()
		s.heartbeatSoon()
	}
}

func wanted(desired map[int32]desiredWorker, id string) bool {
	for _, d := range desired {
		if d.topologyID == id {
			return true
		}
	}
	return false
}

// stopWorkers stops, concurrently, the workers for which stop is true.
func (s *Supervisor) stopWorkers(stop func(int32, *worker) bool) {
	s.mu.Lock()
	var victims []*worker
	for port, w := range s.workers {
		if stop(port, w) {
			victims = append(victims, w)
			delete(s.workers, port)
			s.stopping[w] = struct{}{}
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range victims {
		wg.Go(func() {
			w.stop()
			s.mu.Lock()
			delete(s.stopping, w)
			s.mu.Unlock()
		})
	}
	wg.Wait()
	if len(victims) > 0 {
		s.heartbeatSoon()
	}
}

// leaveWorkers is what a stopping supervisor does with its workers: it
// leaves them to their keepers once every daemon is at
// version.KeepWorkersOnStop's release; before that (a supervisor of
// release 0.1 may come next, and would start a second worker beside each
// kept one) it stops them, as 0.1 did.
func (s *Supervisor) leaveWorkers() {
	if s.identity() != nil {
		s.detachWorkers() // the next supervisor keeps them through the outage too
		return
	}
	release := s.clusterVersion()
	if version.KeepWorkersOnStop.Enabled(release) {
		s.detachWorkers()
		return
	}
	s.log.Warn("stopping the workers: the cluster version does not let a supervisor leave them to the next",
		"cluster_version", release, "needs", version.KeepWorkersOnStop.Release)
	s.stopWorkers(func(int32, *worker) bool { return true })
}

// identity is nil while ZooKeeper holds the cluster this supervisor
// belongs to (package clusterid).
func (s *Supervisor) identity() error {
	return s.memory.Check(s.versions.Snapshot()[cluster.ClusterVersionNode])
}

// outageLog logs the start and the end of an outage, once each.
type outageLog struct{ in bool }

// note logs a change of err, the identity's answer, and reports whether
// the cluster's state is gone.
func (o *outageLog) note(log *slog.Logger, err error) bool {
	switch {
	case err != nil && !o.in:
		log.Error("keeping every worker and all code as they are: " + err.Error())
	case err == nil && o.in:
		log.Warn("the cluster's state is back in ZooKeeper; following its assignments again")
	}
	o.in = err != nil
	return o.in
}

// clusterVersionRead bounds the fresh read of the cluster version when
// stopping: without an answer in time, the cache's is used.
const clusterVersionRead = time.Second

// clusterVersion is the cluster version, read afresh (the cache may be a
// notification behind the leader's last write), or as last cached when
// ZooKeeper does not answer in time; never above the release of the
// nimbus that leads now, which is registered: a leader of release 0.1
// writes no cluster version, so the node may be one a 0.2 leader wrote
// before a roll back.
func (s *Supervisor) clusterVersion() string {
	ctx, cancel := context.WithTimeout(context.Background(), clusterVersionRead)
	defer cancel()
	read := s.sess.ReadFor(ctx)
	v, _, err := read.ClusterVersion()
	if err != nil {
		v = s.versions.Snapshot()[cluster.ClusterVersionNode]
	}
	if v.GetRelease() == "" {
		return ""
	}
	if leader, err := read.LeaderRegistration(); err == nil {
		return version.Lowest(v.GetRelease(), leader.GetRelease())
	}
	return v.GetRelease()
}

// detachWorkers leaves every worker to its keeper and forgets it.
func (s *Supervisor) detachWorkers() {
	s.mu.Lock()
	ws := s.workers
	s.workers = map[int32]*worker{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(w.detach)
	}
	wg.Wait()
}

// removeDeadCode deletes the code of topologies that no longer live. The
// code of a live topology stays even when no slot here runs it any more (a
// rebalance moved it, or it waits to be placed again): supervisors' copies
// are what nimbuses that lost theirs recover from, and the supervisors a
// topology moved to may not have fetched it yet. A supervisor never holds
// more than a nimbus does, which holds every live topology.
func (s *Supervisor) removeDeadCode(desired map[int32]desiredWorker, gone goneTopologies) {
	ids, err := s.store.IDs()
	if err != nil {
		return
	}
	storms := s.storms.Snapshot()
	for id := range ids {
		// Code goes only once its topology's assignment has been gone for
		// the grace: a root being deleted may take /storms first.
		if wanted(desired, id) || cluster.Lives(storms[id]) || gone.waiting(id) {
			continue
		}
		if err := s.store.Remove(id); err == nil {
			delete(gone, id)
			s.log.Info("removed code of a topology the cluster no longer has", "topology", id)
		}
	}
}

// fetch retries until the code is installed or ctx ends.
func (s *Supervisor) fetch(ctx context.Context, id string, digest []byte) {
	backoff := 500 * time.Millisecond
	for {
		err := s.fetcher.Fetch(ctx, id, digest)
		if err == nil {
			s.nudge()
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("cannot fetch code yet; retrying", "topology", id, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
			backoff = min(2*backoff, 30*time.Second)
		}
	}
}
