package nimbus

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
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

// lead does the leader's periodic duties until the term ends: removing
// killed topologies when their wait is over, removing distributions that
// an earlier leader's submission abandoned, and warning when no standby
// could take over.
func (s *Server) lead(term *leader.Term) {
	ctx := term.Context()
	log := s.log.With("epoch", term.Epoch())
	// Schedule only from loaded caches: an empty supervisor list would
	// empty every assignment and stop every worker.
	for _, loaded := range []<-chan struct{}{s.view.storms.Loaded(), s.view.supervisors.Loaded(), s.view.assignments.Loaded()} {
		select {
		case <-loaded:
		case <-ctx.Done():
			return
		}
	}
	sch := newScheduler()
	noStandbyWarned := false
	firstRound := true
	monitor := time.NewTicker(s.cfg.MonitorFreq)
	defer monitor.Stop()
	// Supervisors' heartbeats are not watched (see server.go): read them
	// now and every heartbeatReadEvery, at the cost of a read per
	// supervisor each time.
	s.view.supervisors.Refresh()
	heartbeats := time.NewTicker(heartbeatReadEvery(s.cfg.SupervisorTimeout, s.cfg.SupervisorHeartbeat))
	defer heartbeats.Stop()
	sweep := time.NewTicker(s.cfg.CodeSyncFreq)
	defer sweep.Stop()
	for {
		supsChanged, assignmentsChanged := s.view.supervisors.Changed(), s.view.assignments.Changed()
		stormsChanged, distsChanged := s.view.storms.Changed(), s.view.replicas.Changed()
		nimbusesChanged := s.view.nimbuses.Changed()
		now := time.Now()
		var next time.Time
		storms := s.view.storms.Snapshot()
		for id, base := range storms {
			status := base.GetStatus()
			if base == nil || (status != clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED && status != clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING) {
				continue
			}
			due := time.UnixMilli(base.GetActionDeadlineUnixMs())
			if due.After(now) {
				if next.IsZero() || due.Before(next) {
					next = due
				}
				continue
			}
			var err error
			if status == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
				if err = s.removeTopology(ctx, term, id); err == nil {
					log.Info("killed topology removed", "topology", id, "name", base.GetName())
				}
			} else if err = s.applyRebalance(term, id); err == nil {
				sch.cleared(id)
				log.Info("topology rebalanced; rescheduling it", "topology", id, "name", base.GetName())
			}
			if err != nil {
				log.Warn("cannot complete the topology's timed action; will retry", "topology", id, "status", status, "err", err)
				if retry := now.Add(time.Second); next.IsZero() || retry.Before(next) {
					next = retry
				}
			}
		}
		for id := range s.view.replicas.Distributions.Snapshot() {
			if _, committed := storms[id]; committed || s.svc.isPending(id) {
				continue
			}
			removed, err := s.collectDistribution(ctx, term, id)
			if err != nil {
				log.Warn("cannot remove the code distribution of an uncommitted submission", "topology", id, "err", err)
			} else if removed {
				log.Info("removed the code distribution of a submission that never committed", "topology", id)
			}
		}
		began := time.Now()
		n, err := s.schedule(term, sch)
		s.metrics.scheduleSeconds.Observe(time.Since(began).Seconds())
		switch {
		case err != nil:
			log.Warn("scheduling failed; will retry", "err", err)
		case firstRound:
			// Failover's cost at scale: the lock won to scheduling again.
			log.Info("term's first schedule done", "elapsed_ms", time.Since(term.Began()).Milliseconds(),
				"topologies", len(storms), "supervisors", len(s.view.supervisors.Snapshot()), "assignments_written", n)
			firstRound = false
		case n > 0:
			log.Info("assignments written", "topologies", n, "elapsed_ms", time.Since(began).Milliseconds())
		}
		summary := s.view.clusterInfo().GetCluster()
		s.metrics.eligibleStandbys.Set(float64(summary.GetEligibleStandbys()))
		if summary.GetEligibleStandbys() == 0 && len(summary.GetNimbuses()) > 0 {
			if !noStandbyWarned {
				log.Warn("no standby nimbus holds all code: a failure of this leader cannot fail over",
					"nimbuses", len(summary.GetNimbuses()), "blocked_by", summary.GetLeadershipBlockedBy())
				noStandbyWarned = true
			}
		} else {
			noStandbyWarned = false
		}

		var timer <-chan time.Time
		if !next.IsZero() {
			timer = time.After(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case <-stormsChanged:
		case <-distsChanged:
		case <-nimbusesChanged:
		case <-s.actions:
		case <-timer:
		case <-supsChanged:
		case <-assignmentsChanged:
		case <-monitor.C: // heartbeats going stale wake nothing else
		case <-heartbeats.C:
			s.view.supervisors.Refresh() // its Changed wakes the next round
		case <-sweep.C:
			s.sweepStoredCode(ctx, log)
		}
	}
}

// removeTopology deletes a killed topology from ZooKeeper in one fenced
// write (its StormBase, assignment and distribution with replicas); every
// nimbus then drops the code, and the backend cleans up what it stored.
func (s *Server) removeTopology(ctx context.Context, term *leader.Term, id string) error {
	paths := s.sess.Paths()
	if ok, _, err := s.sess.Conn().Exists(paths.Storm(id)); err != nil || !ok {
		return err // removed already; the cache lags
	}
	extra := []cluster.Op{s.sess.Ops().DeleteStorm(id)}
	if ok, _, err := s.sess.Conn().Exists(paths.Assignment(id)); err != nil {
		return err
	} else if ok {
		extra = append(extra, s.sess.Ops().DeleteAssignment(id))
	}
	if err := deleteDistribution(term, s.sess, id, extra...); err != nil {
		return err
	}
	if err := s.dist.Cleanup(ctx, id); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("code cleanup failed", "topology", id, "err", err)
	}
	return nil
}

// collectDistribution removes the distribution of a submission that never
// committed. The caches can lag (a topology the last leader committed a
// moment before handing over), so /storms is read afresh first.
func (s *Server) collectDistribution(ctx context.Context, term *leader.Term, id string) (bool, error) {
	if ok, _, err := s.sess.Conn().Exists(s.sess.Paths().Storm(id)); err != nil || ok {
		return false, err
	}
	if err := deleteDistribution(term, s.sess, id); err != nil {
		return false, err
	}
	if err := s.dist.Cleanup(ctx, id); err != nil {
		s.log.Warn("code cleanup failed", "topology", id, "err", err)
	}
	return true, nil
}

// applyRebalance ends a rebalance's wait: the plan's workers and
// parallelism become the topology's, its status returns to what it was,
// and its assignment is dropped in the same fenced write, so the next
// round schedules it afresh.
func (s *Server) applyRebalance(term *leader.Term, id string) error {
	paths := s.sess.Paths()
	data, stat, err := s.sess.Conn().Get(paths.Storm(id))
	if err != nil {
		return err
	}
	base := new(clusterv1.StormBase)
	if err := cluster.Decode(paths.Storm(id), data, base); err != nil {
		return err
	}
	if base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING {
		return nil
	}
	plan := base.GetPendingRebalance()
	if plan.GetNumWorkers() > 0 {
		base.NumWorkers = plan.GetNumWorkers()
	}
	for c, n := range plan.GetComponentExecutors() {
		base.ComponentExecutors[c] = n
	}
	base.Status, base.PreviousStatus = base.GetPreviousStatus(), clusterv1.TopologyStatus_TOPOLOGY_STATUS_UNSPECIFIED
	base.PendingRebalance, base.ActionDeadlineUnixMs, base.Epoch = nil, 0, term.Epoch()
	ops := []cluster.Op{s.sess.Ops().SetStorm(id, base, stat.Version)}
	if ok, _, err := s.sess.Conn().Exists(paths.Assignment(id)); err != nil {
		return err
	} else if ok {
		ops = append(ops, s.sess.Ops().DeleteAssignment(id))
	}
	_, err = term.Multi(ops...)
	return err
}

// sweepStoredCode removes code a backend holds outside the nimbuses for
// topologies nothing refers to (no StormBase, no distribution, no
// submission in progress here): what a failed upload or cleanup left.
func (s *Server) sweepStoredCode(ctx context.Context, log *slog.Logger) {
	lister, ok := s.dist.(codedistributor.Lister)
	if !ok {
		return
	}
	ids, err := lister.List(ctx)
	if err != nil {
		log.Warn("cannot list stored code", "err", err)
		return
	}
	paths := s.sess.Paths()
	for _, id := range ids {
		if s.svc.isPending(id) {
			continue
		}
		if ok, _, err := s.sess.Conn().Exists(paths.Storm(id)); err != nil || ok {
			continue
		}
		if ok, _, err := s.sess.Conn().Exists(paths.Distribution(id)); err != nil || ok {
			continue
		}
		if err := s.dist.Cleanup(ctx, id); err != nil {
			log.Warn("cannot remove orphaned stored code", "topology", id, "err", err)
			continue
		}
		log.Info("removed stored code no topology refers to", "topology", id)
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
