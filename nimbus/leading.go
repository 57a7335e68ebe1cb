package nimbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// leadTerms runs leader-only work for each term this nimbus wins, under
// the term's context, until ctx ends.
func (s *Server) leadTerms(ctx context.Context) {
	for {
		term, err := s.election.Await(ctx)
		if err != nil {
			return
		}
		s.lead(term)
	}
}

// duties is one term's leader-only work, and what it remembers from one
// round to the next.
type duties struct {
	*Server
	term            *leader.Term
	ctx             context.Context // the term's
	log             *slog.Logger
	sch             *scheduler
	scheduledOnce   bool
	noStandbySince  time.Time // when the standbys last fell to 0; zero while there are some
	noStandbyWarned bool
	standbysLooked  time.Time // when warnIfNoStandby last looked
}

// lead does the leader's duties until the term ends. A round does each
// once, in this order; a change of what they read, an action from a
// handler, a deadline or a tick starts the next.
func (s *Server) lead(term *leader.Term) {
	d := &duties{Server: s, term: term, ctx: term.Context(), log: s.log.With("epoch", term.Epoch()), sch: newScheduler()}
	defer func() { // what the leader exports about placement is the leader's
		if s.metrics != nil {
			s.metrics.unplacedSlots.Set(0)
			s.metrics.unplacedTopologies.Set(0)
		}
	}()
	if !d.awaitCaches() {
		return
	}
	monitor := time.NewTicker(s.cfg.MonitorFreq)
	defer monitor.Stop()
	// Supervisors' heartbeats are not watched (see newView): the leader
	// reads them now and every heartbeatReadEvery, at the cost of a read
	// per supervisor each time.
	s.view.supervisors.Refresh()
	heartbeats := time.NewTicker(heartbeatReadEvery(s.cfg.SupervisorTimeout, s.cfg.SupervisorHeartbeat))
	defer heartbeats.Stop()
	sweep := time.NewTicker(s.cfg.CodeSyncFreq)
	defer sweep.Stop()
	for {
		// Taken before the round reads what they announce: no change goes
		// unseen.
		v := s.view
		stormsChanged, dists, nimbuses := v.storms.Changed(), v.replicas.Changed(), v.nimbuses.Changed()
		supervisors, assignments := v.supervisors.Changed(), v.assignments.Changed()

		storms := v.storms.Snapshot() // one per round, read by both duties
		next := d.completeTimedActions(storms)
		d.collectAbandonedDistributions(storms)
		d.scheduleRound()
		if warnAt := d.warnIfNoStandby(time.Now()); !warnAt.IsZero() && (next.IsZero() || warnAt.Before(next)) {
			next = warnAt
		}

		var due <-chan time.Time
		if !next.IsZero() {
			due = time.After(time.Until(next))
		}
		select {
		case <-d.ctx.Done():
			return
		case <-stormsChanged:
		case <-dists:
		case <-nimbuses:
		case <-supervisors:
		case <-assignments:
		case <-s.actions: // a kill or rebalance, a submission that ended
		case <-due:
		case <-monitor.C: // heartbeats going stale wake nothing else
		case <-heartbeats.C:
			v.supervisors.Refresh() // its Changed starts the next round
		case <-sweep.C:
			d.sweepStoredCode()
		}
	}
}

// awaitCaches waits until the caches the duties read are loaded:
// scheduling from an empty supervisor list would empty every assignment
// and stop every worker. It reports false if the term ended first.
func (d *duties) awaitCaches() bool {
	for _, loaded := range []<-chan struct{}{d.view.storms.Loaded(), d.view.supervisors.Loaded(), d.view.assignments.Loaded()} {
		select {
		case <-loaded:
		case <-d.ctx.Done():
			return false
		}
	}
	return true
}

// completeTimedActions removes the killed topologies and applies the
// rebalances whose wait is over, and returns when the next wait ends (zero
// if none is waiting). A failure is retried a second later.
func (d *duties) completeTimedActions(storms map[string]*clusterv1.StormBase) time.Time {
	now := time.Now()
	var next time.Time
	dueAt := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for id, base := range storms {
		status := base.GetStatus()
		if status != clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED && status != clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING {
			continue
		}
		if deadline := time.UnixMilli(base.GetActionDeadlineUnixMs()); deadline.After(now) {
			dueAt(deadline)
			continue
		}
		if err := d.completeTimedAction(id, base); err != nil {
			d.log.Warn("cannot complete the topology's timed action; will retry", "topology", id, "status", status, "err", err)
			dueAt(now.Add(time.Second))
		}
	}
	return next
}

// completeTimedAction ends the wait of one killed or rebalancing topology.
func (d *duties) completeTimedAction(id string, base *clusterv1.StormBase) error {
	if base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
		if err := d.removeTopology(id); err != nil {
			return err
		}
		d.log.Info("killed topology removed", "topology", id, "name", base.GetName())
		return nil
	}
	cleared, err := d.applyRebalance(id)
	if err != nil {
		return err
	}
	if cleared {
		d.sch.cleared(id)
	}
	d.log.Info("topology rebalanced; rescheduling it", "topology", id, "name", base.GetName())
	return nil
}

// removeTopology deletes a killed topology from ZooKeeper in one fenced
// write (its StormBase, assignment and distribution with replicas); every
// nimbus then drops the code, and the backend cleans up what it stored.
func (d *duties) removeTopology(id string) error {
	read, ops := d.sess.Read(), d.sess.Ops()
	if ok, err := read.HasStorm(id); err != nil || !ok {
		return err // removed already; the cache lags
	}
	extra := []cluster.Op{ops.DeleteStorm(id)}
	if ok, err := read.HasAssignment(id); err != nil {
		return err
	} else if ok {
		extra = append(extra, ops.DeleteAssignment(id))
	}
	if ok, err := read.HasLost(id); err != nil {
		return err
	} else if ok {
		extra = append(extra, ops.DeleteLost(id, cluster.AnyVersion))
	}
	if err := d.deleteDistribution(id, extra...); err != nil {
		return err
	}
	if err := d.dist.Cleanup(d.ctx, id); err != nil && !errors.Is(err, context.Canceled) {
		d.log.Warn("code cleanup failed", "topology", id, "err", err)
	}
	return nil
}

// applyRebalance ends a rebalance's wait (finishRebalance), dropping the
// topology's assignment in the same fenced write, so the next round
// schedules it afresh. It reports whether it wrote.
func (d *duties) applyRebalance(id string) (bool, error) {
	read, ops := d.sess.Read(), d.sess.Ops()
	base, version, err := read.Storm(id)
	if err != nil {
		return false, err
	}
	if !finishRebalance(base, d.term.Epoch()) {
		return false, nil
	}
	writes := []cluster.Op{ops.SetStorm(id, base, version)}
	if ok, err := read.HasAssignment(id); err != nil {
		return false, err
	} else if ok {
		writes = append(writes, ops.DeleteAssignment(id))
	}
	if _, err = d.term.Multi(writes...); err != nil {
		return false, err
	}
	return true, nil
}

// collectAbandonedDistributions removes the distribution, and the stored
// code, of every submission that never committed: one an earlier leader
// abandoned, or one here that failed.
func (d *duties) collectAbandonedDistributions(storms map[string]*clusterv1.StormBase) {
	for id := range d.view.replicas.Distributions.Snapshot() {
		if _, committed := storms[id]; committed || d.svc.isPending(id) {
			continue
		}
		removed, err := d.removeAbandonedDistribution(id)
		if err != nil {
			d.log.Warn("cannot remove the code distribution of an uncommitted submission", "topology", id, "err", err)
		} else if removed {
			d.log.Info("removed the code distribution of a submission that never committed", "topology", id)
		}
	}
}

// removeAbandonedDistribution removes the distribution of a submission
// that never committed. The caches can lag (a topology the last leader
// committed a moment before handing over), so /storms is read afresh
// first.
func (d *duties) removeAbandonedDistribution(id string) (bool, error) {
	if ok, err := d.sess.Read().HasStorm(id); err != nil || ok {
		return false, err
	}
	if err := d.deleteDistribution(id); err != nil {
		return false, err
	}
	if err := d.dist.Cleanup(d.ctx, id); err != nil {
		d.log.Warn("code cleanup failed", "topology", id, "err", err)
	}
	return true, nil
}

// deleteDistribution removes /code-distributor/<id> and its replicas, with
// extra, in one fenced write, retrying while replicas register meanwhile.
func (d *duties) deleteDistribution(id string, extra ...cluster.Op) error {
	for range 5 {
		var ops []cluster.Op
		replicas, err := d.sess.Read().Replicas(id)
		switch {
		case errors.Is(err, cluster.ErrNoNode): // gone already
		case err != nil:
			return err
		default:
			ops = d.sess.Ops().DeleteDistribution(id, slices.Collect(maps.Keys(replicas)))
		}
		ops = append(ops, extra...)
		if len(ops) == 0 {
			return nil
		}
		_, err = d.term.Multi(ops...)
		if !errors.Is(err, cluster.ErrNotEmpty) && !errors.Is(err, cluster.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("nimbus: the code distribution of %s keeps changing; will retry", id)
}

// scheduleRound assigns the topologies' executors to live slots (see
// schedule) and logs what it wrote. The term's first round says how long
// after the lock was won it was done: the cost of a failover at scale.
func (d *duties) scheduleRound() {
	began := time.Now()
	n, err := d.schedule(d.term, d.sch)
	d.metrics.scheduleSeconds.Observe(time.Since(began).Seconds())
	switch {
	case err != nil:
		d.log.Warn("scheduling failed; will retry", "err", err)
	case !d.scheduledOnce:
		d.log.Info("term's first schedule done", "elapsed_ms", time.Since(d.term.Began()).Milliseconds(),
			"topologies", len(d.view.storms.Snapshot()), "supervisors", len(d.view.supervisors.Snapshot()), "assignments_written", n)
		d.scheduledOnce = true
	case n > 0:
		d.log.Info("assignments written", "topologies", n, "elapsed_ms", time.Since(began).Milliseconds())
	}
}

// warnIfNoStandby exports how many standbys could take over, at once, and
// warns, once per spell, when none could for longer than the replication
// wait (replicationLogWait): a failure of this leader would then leave the
// cluster without one. Right after a submission the followers lack the
// code while they fetch it, which is no news. It looks at most once per
// standbysLookEvery: a look passes over every topology, and rounds come
// with every change. It returns when to look again for the gauge and the
// warning to be on time (zero if nothing is due).
func (d *duties) warnIfNoStandby(now time.Time) time.Time {
	if next := d.standbysLooked.Add(standbysLookEvery); now.Before(next) {
		return next
	}
	d.standbysLooked = now
	summary := d.view.failover()
	d.metrics.eligibleStandbys.Set(float64(summary.GetEligibleStandbys()))
	if summary.GetEligibleStandbys() > 0 || len(summary.GetNimbuses()) == 0 {
		d.noStandbySince, d.noStandbyWarned = time.Time{}, false
		return time.Time{}
	}
	if d.noStandbySince.IsZero() {
		d.noStandbySince = now
	}
	if d.noStandbyWarned {
		return time.Time{}
	}
	wait := replicationLogWait(d.cfg)
	if due := d.noStandbySince.Add(wait); now.Before(due) {
		return due
	}
	d.log.Warn("no standby nimbus holds all code: a failure of this leader cannot fail over",
		"nimbuses", len(summary.GetNimbuses()), "blocked_by", summary.GetLeadershipBlockedBy(),
		"for", now.Sub(d.noStandbySince).Round(time.Millisecond), "wait", wait)
	d.noStandbyWarned = true
	return time.Time{}
}

// standbysLookEvery is how often, at most, the leader looks at which
// nimbuses could take over (warnIfNoStandby).
const standbysLookEvery = time.Second

// replicationLogWait is how long code may be missing from the standbys
// before the leader and codesync warn: topology.max.replication.wait.time.sec,
// the time a submission gives replication. Waiting forever (-1) would
// silence them for good, so that case takes the default wait.
func replicationLogWait(cfg *configs.Config) time.Duration {
	if wait, forever := cfg.MaxReplicationWait(); !forever {
		return wait
	}
	return configs.DefaultMaxReplicationWaitSecs * time.Second
}

// sweepStoredCode removes code a backend holds outside the nimbuses for
// topologies nothing refers to (no StormBase, no distribution, no
// submission in progress here): what a failed upload or cleanup left.
func (d *duties) sweepStoredCode() {
	lister, ok := d.dist.(codedistributor.Lister)
	if !ok {
		return
	}
	ids, err := lister.List(d.ctx)
	if err != nil {
		d.log.Warn("cannot list stored code", "err", err)
		return
	}
	read := d.sess.Read()
	for _, id := range ids {
		if d.svc.isPending(id) {
			continue
		}
		if ok, err := read.HasStorm(id); err != nil || ok {
			continue
		}
		if ok, err := read.HasDistribution(id); err != nil || ok {
			continue
		}
		if err := d.dist.Cleanup(d.ctx, id); err != nil {
			d.log.Warn("cannot remove orphaned stored code", "topology", id, "err", err)
			continue
		}
		d.log.Info("removed stored code no topology refers to", "topology", id)
	}
}

// heartbeatReadEvery is how often the leader reads the heartbeats of
// supervisors that beat every h and count as dead after t (> h, as
// validated). Reading every p, it sees a live one's stamp change at least
// every h+p, so p = (t-h)/2 leaves a live one (t-h)/2 short of the timeout,
// and a silent one is found within t+p, under 1.5 t. (Every t/2 left no
// margin at all when h reached t/2.)
func heartbeatReadEvery(t, h time.Duration) time.Duration {
	return max((t-h)/2, 100*time.Millisecond)
}
