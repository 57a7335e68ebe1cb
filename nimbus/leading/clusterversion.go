package leading

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/clusterid"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/view"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// clusterVersion keeps /versions/cluster at the lowest release any
// registered nimbus or supervisor runs (view.ClusterVersion), so that a
// daemon can tell, from one small node, whether a behaviour that needs
// every daemon upgraded may be on (internal/version.Feature). It rewrites
// the node only when that changes.
type clusterVersion struct {
	term   *leader.Term
	sess   *cluster.Session
	view   *view.View
	memory *clusterid.Memory
	log    *slog.Logger

	known   *clusterv1.ClusterVersion // as read or written this term; nil: read it first
	version int32                     // known's node version; -1: no node
	retryAt time.Time                 // after a failed read or write
}

func newClusterVersion(term *leader.Term, cfg Config, log *slog.Logger) *clusterVersion {
	return &clusterVersion{term: term, sess: cfg.Session, view: cfg.View, memory: cfg.ClusterID, log: log}
}

// clusterVersionRetry paces a failed read or write of the node.
const clusterVersionRetry = time.Second

func (c *clusterVersion) round(r roundState) time.Time {
	if r.now.Before(c.retryAt) {
		return c.retryAt
	}
	release, lowest := c.view.ClusterVersion()
	if release == "" {
		return time.Time{} // nobody registered yet: nothing to say
	}
	if c.known == nil && !c.read(r.now) {
		return c.retryAt
	}
	if c.known.GetRelease() == release && slices.Equal(c.known.GetLowest(), lowest) {
		return time.Time{}
	}
	next := &clusterv1.ClusterVersion{Release: release, SetUnixMs: r.now.UnixMilli(), Epoch: c.term.Epoch(), Lowest: lowest,
		ClusterId: c.known.GetClusterId(), CreatedUnixMs: c.known.GetCreatedUnixMs()}
	if next.ClusterId == "" { // the first leader of this release names the cluster
		next.ClusterId, next.CreatedUnixMs = c.newID(), r.now.UnixMilli()
		c.log.Info("naming the cluster", "cluster_id", next.ClusterId)
	}
	op := c.sess.Ops().CreateClusterVersion(next)
	if c.version >= 0 {
		op = c.sess.Ops().SetClusterVersion(next, c.version)
	}
	if _, err := c.term.Multi(op); err != nil {
		c.log.Warn("cannot write the cluster version; retrying", "release", release, "err", err)
		c.known, c.retryAt = nil, r.now.Add(clusterVersionRetry) // read it again: someone else may have
		return c.retryAt
	}
	if c.known.GetRelease() != release {
		c.log.Info("cluster version", "release", release, "was", c.known.GetRelease(), "lowest", lowest)
	}
	c.known = next
	c.version++ // -1 (none) becomes 0, the created node's
	return time.Time{}
}

// read reads the node into known; false (retry at retryAt) if it cannot.
func (c *clusterVersion) read(now time.Time) bool {
	v, version, err := c.sess.Read().ClusterVersion()
	switch {
	case errors.Is(err, cluster.ErrNoNode):
		c.known, c.version = &clusterv1.ClusterVersion{}, -1
	case errors.Is(err, cluster.ErrInvalidPayload):
		c.log.Warn("the cluster version's node does not decode; rewriting it", "err", err)
		c.known, c.version = &clusterv1.ClusterVersion{}, version
	case err != nil:
		c.log.Warn("cannot read the cluster version; retrying", "err", err)
		c.retryAt = now.Add(clusterVersionRetry)
		return false
	default:
		c.known, c.version = v, version
	}
	return true
}

// newID is the id of a cluster being named: the one this nimbus remembers,
// if any (it leads, so ZooKeeper holds that cluster), else a random one.
func (c *clusterVersion) newID() string {
	if c.memory != nil && c.memory.ID() != "" {
		return c.memory.ID()
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b[:])
}

func (c *clusterVersion) stop() {}
