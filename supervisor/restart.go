package supervisor

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A worker is restarted on request (RestartWorker) when its slot's
// generation in its topology's StormBase.worker_restarts goes above the
// one its run started under. The generation it answers is kept with its
// keeper (keptState), so a supervisor that adopts it neither misses a
// request made while no supervisor ran nor repeats one it already did. A
// worker started afresh starts at its slot's current generation: older
// requests are not for it.

// restartRequests are the restarts asked of one worker.
type restartRequests struct {
	gen   *atomic.Int64 // the generation answered, or being answered
	asked chan string   // the reason of a restart not yet begun
}

func newRestartRequests(gen int64) restartRequests {
	r := restartRequests{gen: new(atomic.Int64), asked: make(chan string, 1)}
	r.gen.Store(gen)
	return r
}

// generation is the generation the worker answers.
func (r restartRequests) generation() int64 { return r.gen.Load() }

// ask asks for a restart if req's generation is above the one answered;
// the run's goroutine carries it out. It reports whether it asked.
func (r restartRequests) ask(req *clusterv1.WorkerRestart) bool {
	g := req.GetGeneration()
	for {
		cur := r.gen.Load()
		if g <= cur {
			return false
		}
		if r.gen.CompareAndSwap(cur, g) {
			break
		}
	}
	reason := fmt.Sprintf("restarted on request of %s at %s", req.GetRequestedBy(),
		time.UnixMilli(req.GetRequestedUnixMs()).UTC().Format(time.RFC3339))
	select {
	case r.asked <- reason:
	default: // one is pending already: it restarts the worker once
	}
	return true
}

// restartError ends a run that was restarted on request.
type restartError struct{ reason string }

func (e restartError) Error() string { return e.reason }

// restartedOn reports whether err ended a run restarted on request, and
// why.
func restartedOn(err error) (string, bool) {
	var r restartError
	if errors.As(err, &r) {
		return r.reason, true
	}
	return "", false
}

// restarted records a restart on request: counted, with its reason as the
// last error; the next run starts at once.
func (w *worker) restarted(reason string) {
	w.log.Info("restarting the worker on request", "reason", reason)
	w.set(func(s *clusterv1.WorkerState) {
		s.State, s.Pid = "starting", 0
		s.LastError, s.LastErrorUnixMs = reason, time.Now().UnixMilli()
		s.LastExitCode, s.LastExitSignal = nil, ""
		s.Restarts++
	})
}

// restartAsked asks each worker whose slot's generation went up to
// restart.
func (s *Supervisor) restartAsked(desired map[int32]desiredWorker) {
	storms := s.storms.Snapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	for port, w := range s.workers {
		d, ok := desired[port]
		if !ok || d.topologyID != w.spec.TopologyID {
			continue
		}
		req := storms[d.topologyID].GetWorkerRestarts()[cluster.SlotKey(s.id, port)]
		if w.restarts.ask(req) {
			s.log.Info("worker restart asked", "topology", d.topologyID, "port", port,
				"generation", req.GetGeneration(), "by", req.GetRequestedBy())
		}
	}
}

// restartGeneration is the generation of port's slot in topology id's
// StormBase now: where a worker started afresh begins.
func (s *Supervisor) restartGeneration(id string, port int32) int64 {
	return s.storms.Snapshot()[id].GetWorkerRestarts()[cluster.SlotKey(s.id, port)].GetGeneration()
}
