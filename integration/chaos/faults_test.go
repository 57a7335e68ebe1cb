package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// pauseFor outlasts the session, so a paused or cut-off nimbus is
// deposed while it cannot know.
const pauseFor = session + 2*time.Second

// fault is one kind of fault: a name (counted, logged, and what
// CHAOS_FAULT_KINDS selects by) and what injects it, which returns once
// the fault has been undone.
type fault struct {
	name string
	do   func()
}

// faults are the kinds a run draws from: every kind, less those
// CHAOS_FAULT_KINDS leaves out; wipe-all-code only with CHAOS_WIPE_ALL=1;
// the cut between nimbuses and the reset of the leader's connections only
// where the machine allows them.
func (r *run) faultKinds() ([]fault, error) {
	all := []fault{
		{"kill-leader", r.killLeader},
		{"kill-leader-long-session", r.killLongSessionLeader},
		{"depose-leader", r.deposeLeader},
		{"restart-leader-at-once", r.restartLeaderAtOnce},
		{"pause-nimbus", r.pauseNimbus},
		{"wipe-follower-code", r.wipeFollowerCode},
		{"restart-zookeeper", r.restartZooKeeper},
		{"kill-supervisor", r.killSupervisor},
		{"restart-supervisor", r.restartSupervisor},
		{"hand-over", r.handOver},
		{"cut-nimbus-from-zookeeper", r.cutNimbus},
		{"cut-nimbus-from-part-of-zookeeper", r.cutNimbusFromPart},
		{"cut-nimbus-from-zookeeper-one-way", r.cutNimbusOneWay},
		{"cut-supervisor-from-zookeeper", r.cutSupervisor},
	}
	if r.peers != nil {
		all = append(all, fault{cutPeersName, r.cutNimbusFromPeers})
	}
	if r.firewall {
		all = append(all, fault{resetLeaderName, r.resetLeaderConnections})
	}
	if r.set.wipeAll {
		all = append(all, fault{wipeAllName, r.wipeAllCode})
	}
	if len(r.set.kinds) == 0 {
		return all, nil
	}
	for _, k := range r.set.kinds {
		if !slices.ContainsFunc(all, func(f fault) bool { return f.name == k }) {
			return nil, fmt.Errorf("CHAOS_FAULT_KINDS: no fault %q here (%s needs CHAOS_WIPE_ALL=1; %s needs root, unshare and ip; %s needs root, iptables and ss)",
				k, wipeAllName, cutPeersName, resetLeaderName)
		}
	}
	return slices.DeleteFunc(all, func(f fault) bool { return !slices.Contains(r.set.kinds, f.name) }), nil
}

// inject runs one fault at a time, at random moments, until ctx ends or,
// with CHAOS_FAULTS, until that many faults were injected; then it calls
// stop. After each fault it waits until a leader accepts a write again
// and records how long that took from the fault's end (awaitHealthy).
func (r *run) inject(ctx context.Context, stop func(), faults []fault) {
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.nextGap()):
		}
		f := faults[r.rng.IntN(len(faults))]
		r.t.Logf("chaos: fault %s at %s", f.name, time.Now().Format("15:04:05.000"))
		r.count(r.faults, f.name)
		f.do()
		r.awaitHealthy(f.name, time.Now())
		if r.set.faults > 0 && r.injected() >= r.set.faults {
			r.t.Logf("chaos: %d faults injected, as CHAOS_FAULTS asked", r.injected())
			return
		}
	}
}

// nextGap draws the time until the next fault: 1 to 4 s by default, or
// CHAOS_FAULT_EVERY (d) give or take half, from d/2 to 3d/2.
func (r *run) nextGap() time.Duration {
	if d := r.set.every; d > 0 {
		return d/2 + time.Duration(r.rng.Int64N(int64(d)))
	}
	return time.Duration(1000+r.rng.IntN(3000)) * time.Millisecond
}

// injected is how many faults were injected so far.
func (r *run) injected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.faults {
		n += c
	}
	return n
}

// awaitHealthy flips the canary until a leader accepts the write, and
// records how long that took from healed, the moment the fault was undone
// (zero when it never stopped the cluster). No leader within 60 s is a
// violation (probe's).
func (r *run) awaitHealthy(kind string, healed time.Time) {
	for time.Since(healed) < 60*time.Second {
		if r.flipCanary() == nil {
			r.mu.Lock()
			r.healed = append(r.healed, time.Since(healed))
			r.mu.Unlock()
			return
		}
		select {
		case <-r.t.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.violation("no leader accepted a write within 60 s of the end of fault %s", kind)
}

// sigkill SIGKILLs d's process, waits for it to exit, and returns when it
// was killed.
func sigkill(d *daemon) time.Time {
	start := time.Now()
	p := d.proc()
	_ = p.Signal(syscall.SIGKILL)
	<-p.Exited()
	return start
}

// killLeader SIGKILLs the leader and starts it again after a while: its
// port refuses connections meanwhile, so a follower deposes it.
func (r *run) killLeader() {
	down := time.Duration(r.rng.IntN(3000)) * time.Millisecond // drawn first: the seed, not the cluster, decides
	d, _, _ := r.leader()
	if d == nil {
		r.t.Logf("chaos: no leader to kill")
		return
	}
	start := sigkill(d)
	recovered := r.probe(start)
	r.hold(down) // down for a while
	r.restart(d)
	r.expectDeposition(d, <-recovered)
}

// killLongSessionLeader SIGKILLs the leader while it is nimbus-1, whose
// session (longSession) outlasts any recovery the probe accepts: a
// follower must depose it. It stays down until a leader accepts writes,
// so that its restart (which clears its past) cannot be what recovered.
// Another nimbus leading is deposed by hand until nimbus-1 leads.
func (r *run) killLongSessionLeader() {
	d := r.nimbuses[0]
	if !r.makeLeader(d) {
		r.t.Logf("chaos: %s could not be made the leader", d.name)
		return
	}
	r.t.Logf("chaos: SIGKILL %s, leading with a %s session", d.name, d.session)
	start := sigkill(d)
	took := <-r.probe(start)
	r.restart(d)
	r.expectDeposition(d, took)
}

// restartLeaderAtOnce SIGKILLs the leader and starts it again at once on
// the same port and local dir, as a service manager would: the lock node
// its dead process left is removed (by a follower, or by the new process
// clearing its past) without waiting for the session.
func (r *run) restartLeaderAtOnce() {
	d, _, _ := r.leader()
	if d == nil {
		r.t.Logf("chaos: no leader to restart")
		return
	}
	start := sigkill(d)
	recovered := r.probe(start)
	r.restart(d)
	r.expectDeposition(d, <-recovered)
}

// expectDeposition: a leader with the long session that died (its port
// refusing connections) is replaced well within that session; took is
// how long the probe waited, zero if it gave up (a violation already).
func (r *run) expectDeposition(d *daemon, took time.Duration) {
	if d.session == longSession && took > longSession/4 {
		r.violation("%s, SIGKILLed while leading with a %s session, was replaced after %s: not deposed",
			d.name, longSession, took.Round(time.Millisecond))
	}
}

// deposeLeader deletes the live leader's lock node by hand, as a follower
// wrongly sure of its death would (a false deposition). The leader must
// stop leading, a leader must accept writes again, and the writes sent
// straight to the deposed leader right away must all be rejected.
func (r *run) deposeLeader() {
	d, epoch, node := r.leader()
	if d == nil {
		r.t.Logf("chaos: no leader to depose")
		return
	}
	r.connect(d) // so that the writes below reach it at once
	start := time.Now()
	if err := r.depose(node); err != nil {
		r.t.Logf("chaos: depose %s: %v", node, err)
		return
	}
	recovered := r.probe(start)
	stale := r.staleWrites(d)
	<-recovered
	errs := <-stale
	if now, newEpoch, _ := r.leader(); now == d && newEpoch > epoch && slices.Contains(errs, nil) {
		// It was queued again and leads anew (nobody else was queued):
		// what it accepted it accepted in its new term.
		r.t.Logf("chaos: deposed %s leads again (epoch %d, was %d)", d.name, newEpoch, epoch)
		return
	}
	r.checkStale(d, epoch, errs)
}

// depose deletes a lock node by its path and version, as deposition does.
func (r *run) depose(node string) error {
	_, st, err := r.conn.Get(node)
	if err != nil {
		return err
	}
	return r.conn.Delete(node, st.Version)
}

// makeLeader deposes whoever leads until d does: each deposition sends the
// leader to the back of the queue, so with three nimbuses queued it takes
// two at most. Those are depose-leader faults, checked and counted so.
func (r *run) makeLeader(d *daemon) bool {
	for range 3 {
		leader, _, _ := r.leader()
		if leader == d {
			return true
		}
		if leader == nil {
			return false
		}
		r.t.Logf("chaos: fault depose-leader (so that %s leads) at %s", d.name, time.Now().Format("15:04:05.000"))
		r.count(r.faults, "depose-leader")
		r.deposeLeader()
	}
	leader, _, _ := r.leader()
	return leader == d
}

// pauseNimbus stops a nimbus (the leader, half the time) for longer than
// its session. A paused leader is woken only once ZooKeeper has deposed
// it, with writes already waiting for it: it must accept none.
//
// Only nimbuses with the cluster's short session are paused: pausing
// nimbus-1 past its long session would take most of a 60 s run.
func (r *run) pauseNimbus() {
	short := slices.DeleteFunc(slices.Clone(r.nimbuses), func(d *daemon) bool { return d.session != 0 })
	pick, coin := short[r.rng.IntN(len(short))], r.rng.IntN(2)
	d, epoch, node := r.leader()
	if d == nil || coin == 0 && pick != d || d.session != 0 {
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
	var recovered <-chan time.Duration
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
	var recovered <-chan time.Duration
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

// lockDir is the leader-lock queue: its first node leads.
const lockDir = "/storm/leader-lock"

// leader returns the nimbus whose lock node is first in ZooKeeper, its
// epoch and its lock node; nil while nobody holds the lock.
func (r *run) leader() (d *daemon, epoch int64, node string) {
	names, _, err := r.conn.Children(lockDir)
	if err != nil {
		return nil, 0, ""
	}
	order := cluster.LockOrder(names)
	if len(order) == 0 {
		return nil, 0, ""
	}
	head := order[0]
	data, _, err := r.conn.Get(lockDir + "/" + head.Name)
	if err != nil {
		return nil, 0, ""
	}
	info := new(clusterv1.NimbusInfo)
	if cluster.Decode(head.Name, data, info) != nil {
		return nil, 0, ""
	}
	for _, d := range r.nimbuses {
		if int32(d.port) == info.GetPort() {
			return d, head.Epoch(), lockDir + "/" + head.Name
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
// how long that took from start; the channel yields that (zero if no
// leader accepted one) and closes then.
func (r *run) probe(start time.Time) <-chan time.Duration {
	done := make(chan time.Duration, 1)
	go func() {
		defer close(done)
		for time.Since(start) < 60*time.Second {
			if r.flipCanary() == nil {
				took := time.Since(start)
				r.t.Logf("chaos: leader writes accepted again %s after the leader was lost", took.Round(time.Millisecond))
				r.mu.Lock()
				r.recoveries = append(r.recoveries, took)
				r.mu.Unlock()
				done <- took
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
			errs[i] = r.setCanary(ctx, clientProbe+i, api, inactive)
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

// setCanary activates or deactivates the canary at one nimbus, directly,
// and records the write, unless it never reached the nimbus (no stream
// was opened) or a follower refused it (NOT_LEADER): neither tells
// anything of the canary.
func (r *run) setCanary(ctx context.Context, client int, api nimbusv1.NimbusServiceClient, active bool) error {
	var p peer.Peer
	var err error
	in := opInput{kind: opDeactivate, name: canaryName}
	call := r.hist.now()
	if active {
		in.kind = opActivate
		_, err = api.ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: canaryName}, grpc.Peer(&p))
	} else {
		_, err = api.DeactivateTopology(ctx, &nimbusv1.DeactivateTopologyRequest{Name: canaryName}, grpc.Peer(&p))
	}
	if err == nil || p.Addr != nil && !notLeader(status.Convert(err)) {
		r.hist.write(client, in, call, err, false)
	}
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
				errs[i] = r.setCanary(ctx, clientStale+i, api, active)
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
