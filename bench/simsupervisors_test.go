package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// simSupervisors are many supervisors in one process, each with its own
// ZooKeeper session, registered as a real supervisor registers and
// heartbeating as one does: one write per beat, no other request. They run
// no workers, but report the workers setWorkers describes.
type simSupervisors struct {
	servers []string
	paths   cluster.Paths
	every   time.Duration
	conns   []*zk.Conn
	ids     []string
	beats   atomic.Int64
	failed  atomic.Int64
	workers atomic.Pointer[simWorkers] // nil: no workers reported
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// startSimSupervisors connects n supervisors (parallel at a time),
// registers each and starts their heartbeats, spread evenly over one
// period. It returns once all are registered; progress, if not nil, is
// told every 100.
func startSimSupervisors(servers []string, root string, n, parallel int, every time.Duration, progress func(int)) (*simSupervisors, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &simSupervisors{servers: servers, paths: cluster.Paths{Root: root}, every: every, conns: make([]*zk.Conn, n), ids: make([]string, n), cancel: cancel}
	var (
		next, done atomic.Int64
		errOnce    sync.Once
		firstErr   error
		wg         sync.WaitGroup
	)
	started := time.Now()
	for range parallel {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := s.register(i, started); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if d := done.Add(1); progress != nil && d%100 == 0 {
					progress(int(d))
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		s.Close()
		return nil, firstErr
	}
	for i := range n {
		offset := every * time.Duration(i) / time.Duration(n)
		s.wg.Go(func() { s.heartbeat(ctx, i, offset) })
	}
	return s, nil
}

// simWorkers gives the worker states supervisor i reports in a heartbeat
// written at now; it is called from every supervisor's goroutine.
type simWorkers func(i int, now time.Time) []*clusterv1.WorkerState

// setWorkers has each later heartbeat report the workers f gives (none
// when f is nil).
func (s *simSupervisors) setWorkers(f simWorkers) {
	if f == nil {
		s.workers.Store(nil)
		return
	}
	s.workers.Store(&f)
}

func (s *simSupervisors) info(i int, started time.Time) []byte {
	now := time.Now()
	info := &clusterv1.SupervisorInfo{
		SupervisorId: s.ids[i], Host: fmt.Sprintf("sim-%d", i), SlotPorts: []int32{6700, 6701, 6702, 6703},
		StartTimeUnixMs: started.UnixMilli(), Version: "sim", LastHeartbeatUnixMs: now.UnixMilli(),
	}
	if f := s.workers.Load(); f != nil {
		info.Workers = (*f)(i, now)
		for _, w := range info.Workers {
			info.UsedPorts = append(info.UsedPorts, w.GetPort())
		}
	}
	return cluster.Encode(info)
}

func (s *simSupervisors) register(i int, started time.Time) error {
	connected := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect(s.servers, 10*time.Second, zk.WithLogInfo(false), zk.WithEventCallback(func(ev zk.Event) {
		if ev.State == zk.StateHasSession {
			once.Do(func() { close(connected) })
		}
	}))
	if err != nil {
		return err
	}
	s.conns[i] = conn
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("simulated supervisor %d: no session in 30s", i)
	}
	s.ids[i] = fmt.Sprintf("sim-%05d", i)
	if _, err := conn.Create(s.paths.Supervisor(s.ids[i]), s.info(i, started), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return fmt.Errorf("simulated supervisor %d: register: %w", i, err)
	}
	return nil
}

func (s *simSupervisors) heartbeat(ctx context.Context, i int, offset time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(offset):
	}
	started := time.Now()
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		_, err := s.conns[i].Set(s.paths.Supervisor(s.ids[i]), s.info(i, started), -1)
		if errors.Is(err, zk.ErrNoNode) { // the root was wiped: register again, as a supervisor does
			if err = cluster.EnsurePath(s.conns[i], s.paths.Supervisors()); err == nil {
				_, err = s.conns[i].Create(s.paths.Supervisor(s.ids[i]), s.info(i, started), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			}
		}
		if err != nil {
			s.failed.Add(1)
		} else {
			s.beats.Add(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sessions returns the simulated supervisors' session ids.
func (s *simSupervisors) sessions() map[int64]bool {
	out := make(map[int64]bool, len(s.conns))
	for _, c := range s.conns {
		out[c.SessionID()] = true
	}
	return out
}

// Close stops the heartbeats and closes every session.
func (s *simSupervisors) Close() {
	s.cancel()
	s.wg.Wait()
	for _, c := range s.conns {
		if c != nil {
			c.Close()
		}
	}
}
