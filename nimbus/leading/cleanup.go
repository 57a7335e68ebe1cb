package leading

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// cleanup removes what no topology refers to: the distribution and the
// stored code of every submission that never committed (one an earlier
// leader abandoned, or one here that failed), every round; and, every
// sweepEvery (nimbus.code.sync.freq.secs), code a backend holds outside
// the nimbuses for topologies nothing refers to, left by a failed upload
// or cleanup.
type cleanup struct {
	term       *leader.Term
	sess       *cluster.Session                               // reads afresh; the ops of the term's writes
	dists      *cluster.DirCache[*clusterv1.CodeDistribution] // /code-distributor
	dist       codedistributor.Distributor                    // what the backend stores (Lister) and its Cleanup
	pending    func(id string) bool                           // a submission in progress here
	sweepBlobs func(ctx context.Context)                      // what a backend keeps of blobs, tidied (docs/ARCHITECTURE.md section 24)
	sweepEvery time.Duration
	nextSweep  time.Time
	log        *slog.Logger
}

func newCleanup(term *leader.Term, cfg Config, log *slog.Logger) *cleanup {
	return &cleanup{term: term, sess: cfg.Session, dists: cfg.View.Replicas.Distributions, dist: cfg.Dist, pending: cfg.Pending,
		sweepBlobs: cfg.SweepBlobs, sweepEvery: cfg.Nimbus.CodeSyncFreq, nextSweep: time.Now().Add(cfg.Nimbus.CodeSyncFreq), log: log}
}

func (c *cleanup) round(r roundState) time.Time {
	c.collectAbandonedDistributions(r.storms)
	if !r.now.Before(c.nextSweep) {
		c.sweepStoredCode()
		if c.sweepBlobs != nil {
			c.sweepBlobs(c.term.Context())
		}
		c.nextSweep = r.now.Add(c.sweepEvery)
	}
	return c.nextSweep
}

func (c *cleanup) stop() {}

// collectAbandonedDistributions removes the distribution, and the stored
// code, of every submission that never committed.
func (c *cleanup) collectAbandonedDistributions(storms map[string]*clusterv1.StormBase) {
	for id := range c.dists.Snapshot() {
		if _, committed := storms[id]; committed || c.pending(id) {
			continue
		}
		removed, err := c.removeAbandonedDistribution(id)
		if err != nil {
			c.log.Warn("cannot remove the code distribution of an uncommitted submission", "topology", id, "err", err)
		} else if removed {
			c.log.Info("removed the code distribution of a submission that never committed", "topology", id)
		}
	}
}

// removeAbandonedDistribution removes the distribution of a submission
// that never committed. The caches can lag (a topology the last leader
// committed a moment before handing over), so /storms is read afresh
// first.
func (c *cleanup) removeAbandonedDistribution(id string) (bool, error) {
	if ok, err := c.sess.Read().HasStorm(id); err != nil || ok {
		return false, err
	}
	if err := deleteDistribution(c.term, c.sess, id); err != nil {
		return false, err
	}
	if err := c.dist.Cleanup(c.term.Context(), id); err != nil {
		c.log.Warn("code cleanup failed", "topology", id, "err", err)
	}
	return true, nil
}

// sweepStoredCode removes code a backend holds outside the nimbuses for
// topologies nothing refers to: no StormBase, no distribution, no
// submission in progress here.
func (c *cleanup) sweepStoredCode() {
	lister, ok := c.dist.(codedistributor.Lister)
	if !ok {
		return
	}
	ids, err := lister.List(c.term.Context())
	if err != nil {
		c.log.Warn("cannot list stored code", "err", err)
		return
	}
	read := c.sess.Read()
	for _, id := range ids {
		if c.pending(id) {
			continue
		}
		if ok, err := read.HasStorm(id); err != nil || ok {
			continue
		}
		if ok, err := read.HasDistribution(id); err != nil || ok {
			continue
		}
		if err := c.dist.Cleanup(c.term.Context(), id); err != nil {
			c.log.Warn("cannot remove orphaned stored code", "topology", id, "err", err)
			continue
		}
		c.log.Info("removed stored code no topology refers to", "topology", id)
	}
}

// deleteDistribution removes topology id's distribution and its replicas,
// with extra, in one fenced write, retrying while replicas register
// meanwhile.
func deleteDistribution(term *leader.Term, sess *cluster.Session, id string, extra ...cluster.Op) error {
	for range 5 {
		var ops []cluster.Op
		replicas, err := sess.Read().ReplicaNames(id)
		switch {
		case errors.Is(err, cluster.ErrNoNode): // gone already
		case err != nil:
			return err
		default:
			ops = sess.Ops().DeleteDistribution(id, replicas)
		}
		ops = append(ops, extra...)
		if len(ops) == 0 {
			return nil
		}
		_, err = term.Multi(ops...)
		if !errors.Is(err, cluster.ErrNotEmpty) && !errors.Is(err, cluster.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("nimbus: the code distribution of %s keeps changing; will retry", id)
}
