package leading

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// timedActions ends the waits of kills and rebalances: once a killed
// topology's wait is over it is removed, and once a rebalancing one's is,
// its plan is applied (package topology says when each status ends).
type timedActions struct {
	term *leader.Term
	sess *cluster.Session            // reads afresh; the ops of the term's writes
	dist codedistributor.Distributor // cleans up what a removed topology stored
	// cleared tells the scheduling that this term deleted a topology's
	// assignment (a rebalance applied).
	cleared func(id string)
	log     *slog.Logger
}

func newTimedActions(term *leader.Term, cfg Config, cleared func(id string), log *slog.Logger) *timedActions {
	return &timedActions{term: term, sess: cfg.Session, dist: cfg.Dist, cleared: cleared, log: log}
}

// round completes the actions whose wait is over, and returns when the
// next wait ends (zero if none is waiting). A failure is retried a second
// later.
func (t *timedActions) round(r roundState) time.Time {
	var next time.Time
	for id, base := range r.storms {
		status := base.GetStatus()
		if status != clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED && status != clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING {
			continue
		}
		if deadline := time.UnixMilli(base.GetActionDeadlineUnixMs()); deadline.After(r.now) {
			next = earliest(next, deadline)
			continue
		}
		if err := t.complete(id, base); err != nil {
			t.log.Warn("cannot complete the topology's timed action; will retry", "topology", id, "status", status, "err", err)
			next = earliest(next, r.now.Add(time.Second))
		}
	}
	return next
}

func (t *timedActions) stop() {}

// complete ends the wait of one killed or rebalancing topology.
func (t *timedActions) complete(id string, base *clusterv1.StormBase) error {
	if base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
		if err := t.remove(id); err != nil {
			return err
		}
		t.log.Info("killed topology removed", "topology", id, "name", base.GetName())
		return nil
	}
	cleared, err := t.rebalance(id)
	if err != nil {
		return err
	}
	if cleared {
		t.cleared(id)
	}
	t.log.Info("topology rebalanced; rescheduling it", "topology", id, "name", base.GetName())
	return nil
}

// remove deletes a killed topology from ZooKeeper in one fenced write (its
// StormBase, assignment, LOST mark and distribution with replicas); every
// nimbus then drops the code, and the backend cleans up what it stored.
func (t *timedActions) remove(id string) error {
	read, ops := t.sess.Read(), t.sess.Ops()
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
	if err := deleteDistribution(t.term, t.sess, id, extra...); err != nil {
		return err
	}
	if err := t.dist.Cleanup(t.term.Context(), id); err != nil && !errors.Is(err, context.Canceled) {
		t.log.Warn("code cleanup failed", "topology", id, "err", err)
	}
	return nil
}

// rebalance ends a rebalance's wait (topology.FinishRebalance), dropping
// the topology's assignment in the same fenced write, so the next round
// schedules it afresh. It reports whether it wrote.
func (t *timedActions) rebalance(id string) (bool, error) {
	read, ops := t.sess.Read(), t.sess.Ops()
	base, version, err := read.Storm(id)
	if err != nil {
		return false, err
	}
	if !topology.FinishRebalance(base, t.term.Epoch()) {
		return false, nil
	}
	writes := []cluster.Op{ops.SetStorm(id, base, version)}
	if ok, err := read.HasAssignment(id); err != nil {
		return false, err
	} else if ok {
		writes = append(writes, ops.DeleteAssignment(id))
	}
	if _, err = t.term.Multi(writes...); err != nil {
		return false, err
	}
	return true, nil
}
