package supervisor

import (
	"context"
	"sync"
	"time"
)

// reconcileLoop makes the running workers match the assignments: it
// fetches missing code, stops workers whose slot changed hands or
// executors, starts the missing ones, and removes unassigned code. When it
// returns (the supervisor closing) it stops every worker.
func (s *Supervisor) reconcileLoop(ctx context.Context) {
	// Act only on loaded assignments: an empty first read would delete
	// every bundle and start nothing.
	select {
	case <-s.assignments.Loaded():
	case <-ctx.Done():
		return
	}
	var fetches sync.WaitGroup
	fetching := map[string]context.CancelFunc{}
	fetched := make(chan string, 16)
	defer func() {
		for _, cancel := range fetching {
			cancel()
		}
		fetches.Wait()
		s.stopWorkers(func(int32, *worker) bool { return true })
	}()
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		changed := s.assignments.Changed()
		desired := s.desired()

		// Code first: a worker starts only from verified code.
		ready := map[string]bool{}
		for _, d := range desired {
			if _, done := ready[d.topologyID]; done {
				continue
			}
			ready[d.topologyID] = s.store.Verify(d.topologyID, d.digest) == nil
			if !ready[d.topologyID] && fetching[d.topologyID] == nil {
				fctx, cancel := context.WithCancel(ctx)
				fetching[d.topologyID] = cancel
				id, digest := d.topologyID, d.digest
				fetches.Go(func() {
					s.fetch(fctx, id, digest)
					select {
					case fetched <- id:
					case <-ctx.Done():
					}
				})
			}
		}
		for id, cancel := range fetching {
			if ready[id] || !wanted(desired, id) {
				cancel()
				delete(fetching, id)
			}
		}

		// Stop what no longer matches, all at once (each takes up to the
		// grace period), then start what is missing.
		s.stopWorkers(func(port int32, w *worker) bool {
			d, ok := desired[port]
			return !ok || d.topologyID != w.spec.TopologyID || d.executors != w.spec.Executors
		})
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
			w := startWorker(ctx, spec, s.spawn, s.cfg.WorkerShutdownSleep, s.log, s.heartbeatSoon)
			s.mu.Lock()
			s.workers[port] = w
			s.mu.Unlock()
			s.heartbeatSoon()
		}
		s.removeUnassignedCode(desired)

		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-s.wake:
		case <-tick.C:
		case id := <-fetched: // done or given up: the next pass decides again
			if cancel := fetching[id]; cancel != nil {
				cancel()
				delete(fetching, id)
			}
		}
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
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range victims {
		wg.Go(w.stop)
	}
	wg.Wait()
	if len(victims) > 0 {
		s.heartbeatSoon()
	}
}

// removeUnassignedCode deletes code no assignment of this supervisor uses.
func (s *Supervisor) removeUnassignedCode(desired map[int32]desiredWorker) {
	ids, err := s.store.IDs()
	if err != nil {
		return
	}
	for _, id := range ids {
		if !wanted(desired, id) {
			if err := s.store.Remove(id); err == nil {
				s.log.Info("removed code no longer assigned here", "topology", id)
			}
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
