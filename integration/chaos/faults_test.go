package chaos_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// pauseFor outlasts the session, so a paused or cut-off nimbus is
// deposed while it cannot know.
const pauseFor = session + 2*time.Second

// inject runs one fault at a time, at random moments, until ctx ends.
func (r *run) inject(ctx context.Context) {
	faults := []struct {
		name string
		do   func()
	}{
		{"kill-leader", r.killLeader},
		{"pause-nimbus", r.pauseNimbus},
		{"wipe-follower-code", r.wipeFollowerCode},
		{"restart-zookeeper", r.restartZooKeeper},
		{"kill-supervisor", r.killSupervisor},
		{"cut-nimbus-from-zookeeper", r.cutNimbus},
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(1000+r.rng.IntN(3000)) * time.Millisecond):
		}
		f := faults[r.rng.IntN(len(faults))]
		r.t.Logf("chaos: fault %s at %s", f.name, time.Now().Format("15:04:05.000"))
		r.count(r.faults, f.name)
		f.do()
	}
}

func (r *run) killLeader() {
	d, _, _ := r.leader()
	if d == nil {
		r.t.Logf("chaos: no leader to kill")
		return
	}
	start := time.Now()
	p := d.proc()
	_ = p.Signal(syscall.SIGKILL)
	<-p.Exited()
	recovered := r.probe(start)
	r.restart(d)
	<-recovered
}

// pauseNimbus stops a nimbus (the leader, half the time) for longer than
// its session. A paused leader is woken only once ZooKeeper has deposed
// it, with writes already waiting for it: it must accept none.
func (r *run) pauseNimbus() {
	pick, coin := r.nimbuses[r.rng.IntN(len(r.nimbuses))], r.rng.IntN(2)
	d, epoch, node := r.leader()
	if d == nil || coin == 0 && pick != d {
		d, node = pick, ""
	}
	p := d.proc()
	if node != "" {
		r.connect(d) // so that the writes sent while it sleeps wait in its socket
	}
	start := time.Now()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return // it has just died
	}
	var recovered <-chan struct{}
	var stale <-chan []error
	if node != "" {
		recovered = r.probe(start)
		r.waitDeposed(node)
		stale = r.staleWrites(d)
	}
	r.hold(time.Until(start.Add(pauseFor))) // a pause at least this long
	_ = p.Signal(syscall.SIGCONT)
	if node != "" {
		<-recovered
		r.checkStale(d, epoch, <-stale)
	}
}

// hold lets a fault last for d: its length is the fault itself, not a wait
// for some condition. It returns early when the test ends.
func (r *run) hold(d time.Duration) {
	select {
	case <-time.After(d):
	case <-r.t.Context().Done():
	}
}

// wipeFollowerCode deletes a follower's stored code behind its back.
func (r *run) wipeFollowerCode() {
	leader, _, _ := r.leader()
	var followers []*daemon
	for _, d := range r.nimbuses {
		if d != leader {
			followers = append(followers, d)
		}
	}
	d := followers[r.rng.IntN(len(followers))]
	dir := filepath.Join(d.local, "nimbus", "code")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

func (r *run) restartZooKeeper() {
	z := r.ens.Servers[r.rng.IntN(len(r.ens.Servers))]
	z.Stop()
	r.hold(time.Duration(500+r.rng.IntN(2500)) * time.Millisecond) // the outage
	z.Start()
}

func (r *run) killSupervisor() {
	d := r.sups[r.rng.IntN(len(r.sups))]
	p := d.proc()
	_ = p.Signal(syscall.SIGKILL)
	<-p.Exited()
	r.hold(time.Duration(r.rng.IntN(3000)) * time.Millisecond) // down for a while
	r.restart(d)
}

// cutNimbus takes the proxied nimbus off ZooKeeper for longer than its
// session. Cut off while leading, it is sent writes once deposed and
// must accept none, then or after it is reconnected.
func (r *run) cutNimbus() {
	d := r.nimbuses[2]
	leader, epoch, node := r.leader()
	start := time.Now()
	for _, p := range r.proxies {
		p.Cut()
	}
	var recovered <-chan struct{}
	var stale <-chan []error
	if d == leader {
		recovered = r.probe(start)
		r.waitDeposed(node)
		stale = r.staleWrites(d)
	}
	r.hold(time.Until(start.Add(pauseFor))) // a partition at least this long
	for _, p := range r.proxies {
		p.Restore()
	}
	if d == leader {
		<-recovered
		r.checkStale(d, epoch, <-stale)
	}
}

// leader returns the nimbus whose lock node is first in ZooKeeper, its
// epoch and its lock node; nil while nobody holds the lock.
func (r *run) leader() (d *daemon, epoch int64, node string) {
	const lock = "/storm/leader-lock"
	names, _, err := r.conn.Children(lock)
	if err != nil || len(names) == 0 {
		return nil, 0, ""
	}
	seq := func(name string) int64 {
		n, _ := strconv.ParseInt(name[strings.LastIndex(name, "-")+1:], 10, 64)
		return n
	}
	first := slices.MinFunc(names, func(a, b string) int { return cmp.Compare(seq(a), seq(b)) })
	data, _, err := r.conn.Get(lock + "/" + first)
	if err != nil {
		return nil, 0, ""
	}
	info := new(clusterv1.NimbusInfo)
	if cluster.Decode(first, data, info) != nil {
		return nil, 0, ""
	}
	for _, d := range r.nimbuses {
		if int32(d.port) == info.GetPort() {
			return d, seq(first) + 1, lock + "/" + first
		}
	}
	return nil, 0, ""
}

// waitDeposed waits until node, a leader's lock node, is gone: from then
// on that nimbus leads no more, whatever it believes.
func (r *run) waitDeposed(node string) {
	err := testcluster.Poll(30*time.Second, func() error {
		ok, _, err := r.conn.Exists(node)
		if err == nil && ok {
			err = fmt.Errorf("%s still exists", node)
		}
		return err
	})
	if err != nil {
		r.t.Errorf("chaos: a paused or cut-off leader was never deposed: %v", err)
	}
}

// probe flips the canary until a leader accepts the write, and records
// how long that took from start; the channel closes then.
func (r *run) probe(start time.Time) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Since(start) < 60*time.Second {
			if r.flipCanary() == nil {
				took := time.Since(start)
				r.t.Logf("chaos: leader writes accepted again %s after the leader was lost", took.Round(time.Millisecond))
				r.mu.Lock()
				r.recoveries = append(r.recoveries, took)
				r.mu.Unlock()
				return
			}
			select {
			case <-r.t.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		r.violation("no leader accepted a write within 60 s of losing the last one")
	}()
	return done
}

// flipCanary asks every nimbus at once, directly, to deactivate the
// canary if it was last seen active and to activate it otherwise: a
// leader write either way, which only the leader accepts. Asking directly
// measures the cluster, not the SDK's redirects and backoff. (Had a call
// that failed been committed, the next flip fails as a no-op once.)
func (r *run) flipCanary() error {
	r.mu.Lock()
	inactive := r.canaryInactive
	r.mu.Unlock()
	errs := make([]error, len(r.apis))
	var wg sync.WaitGroup
	for i, api := range r.apis {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.t.Context(), 500*time.Millisecond)
			defer cancel()
			errs[i] = setCanary(ctx, api, inactive)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			r.mu.Lock()
			r.canaryInactive = !inactive
			r.mu.Unlock()
			return nil
		}
	}
	return errors.Join(errs...)
}

func setCanary(ctx context.Context, api nimbusv1.NimbusServiceClient, active bool) error {
	if active {
		_, err := api.ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: canaryName})
		return err
	}
	_, err := api.DeactivateTopology(ctx, &nimbusv1.DeactivateTopologyRequest{Name: canaryName})
	return err
}

// staleWrites sends leader writes straight to d, a leader deposed while
// it could not know (paused or cut off), before it can learn: both an
// activation and a deactivation of the canary, so that whichever status
// d last saw, one of them passes its checks and reaches ZooKeeper. The
// channel yields once both are answered.
func (r *run) staleWrites(d *daemon) <-chan []error {
	api := r.apis[slices.Index(r.nimbuses, d)]
	out := make(chan []error, 1)
	go func() {
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, active := range []bool{true, false} {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(r.t.Context(), 30*time.Second)
				defer cancel()
				errs[i] = setCanary(ctx, api, active)
			})
		}
		wg.Wait()
		out <- errs
	}()
	return out
}

// connect makes sure the probes' connection to d is up.
func (r *run) connect(d *daemon) {
	ctx, cancel := context.WithTimeout(r.t.Context(), 2*time.Second)
	defer cancel()
	_, _ = r.apis[slices.Index(r.nimbuses, d)].GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
}

// checkStale: a deposed leader accepts no write. Those that reach its
// term are fenced: by the term's own end-of-term check, or by ZooKeeper.
func (r *run) checkStale(d *daemon, epoch int64, errs []error) {
	r.mu.Lock()
	r.staleSent += len(errs)
	r.mu.Unlock()
	for _, err := range errs {
		if err == nil {
			r.violation("%s accepted a write after it was deposed (epoch %d)", d.name, epoch)
			continue
		}
		r.t.Logf("chaos: deposed %s rejected a write: %v", d.name, err)
		r.mu.Lock()
		r.staleRejected++
		if strings.Contains(err.Error(), "write fenced") {
			r.staleFenced++
		}
		r.mu.Unlock()
	}
}
