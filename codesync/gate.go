package codesync

import (
	"errors"
	"fmt"
	"sort"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/clusterid"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Gate is the election's gate of invariant 6: a nimbus may lead only while
// it holds, verified, the code of every topology that needs it. The
// election asks Eligible when it wins the lock; the Syncer keeps the
// nimbus queued only while Missing finds nothing.
type Gate struct {
	Session *cluster.Session
	Store   *codedistributor.Store
	// Storms is the cache of /storms: what Eligible need not read again.
	Storms *cluster.DirCache[*clusterv1.StormBase]
	// Lost is the cache of /lost (lost.go); nil: no topology is LOST.
	Lost *cluster.DirCache[*clusterv1.LostMark]
	// Versions is the cache of /versions and Memory the cluster this
	// nimbus belongs to (package clusterid); nil Memory: not checked.
	Versions *cluster.DirCache[*clusterv1.ClusterVersion]
	Memory   *clusterid.Memory
}

// Identity is nil while ZooKeeper holds the cluster this nimbus belongs
// to (or one not named yet), else clusterid's ErrOutage: the root was
// wiped or is another cluster's, and nothing may be led or deleted.
func (g Gate) Identity() error {
	if g.Memory == nil {
		return nil
	}
	return g.Memory.Check(g.Versions.Snapshot()[cluster.ClusterVersionNode])
}

// Eligible checks, against a fresh read of /storms (a cache may lag the
// write that a lock hand-over follows), that this nimbus holds the code of
// every topology that needs it, verified.
func (g Gate) Eligible() error {
	if err := g.Identity(); err != nil {
		return err
	}
	read := g.Session.Read()
	ids, err := read.StormIDs()
	if errors.Is(err, cluster.ErrNoNode) {
		ids, err = nil, nil // deleted by hand (the whole root, say): no topologies
	}
	if err != nil {
		return fmt.Errorf("codesync: cannot list the topologies: %w", err)
	}
	cached := g.Storms.Snapshot() // a nil payload: read, never decoded
	storms := make(map[string]*clusterv1.StormBase, len(ids))
	for _, id := range ids {
		base, known := cached[id]
		if !known {
			var err error
			base, _, err = read.Storm(id)
			switch {
			case errors.Is(err, cluster.ErrNoNode):
				continue // removed since the listing
			case errors.Is(err, cluster.ErrInvalidPayload): // names no code (needing)
			case err != nil:
				// Not knowing what it needs is not holding it.
				return fmt.Errorf("codesync: cannot read topology %s: %w", id, err)
			}
		}
		storms[id] = base
	}
	// /lost read afresh too: Eligible must not lead on a mark that a
	// nimbus holding the code has already deleted.
	marks, err := read.LostMarks()
	if err != nil {
		return fmt.Errorf("codesync: cannot read the LOST marks: %w", err)
	}
	if missing := g.missing(storms, marks); len(missing) > 0 {
		return fmt.Errorf("codesync: no verified code for %d active topologies: %v", len(missing), missing)
	}
	return nil
}

// needing returns the topologies of storms whose code a leader must hold,
// by the LOST marks: all but those being killed (it only removes them),
// those marked LOST (lost.go), and StormBases that never decoded (garbage
// or an empty node, logged by the cache), which name no code to hold and
// nothing a leader could schedule, or one junk node would take every
// nimbus out of the leader queue.
func needing(storms map[string]*clusterv1.StormBase, marks map[string]*clusterv1.LostMark) map[string]*clusterv1.StormBase {
	lost := LostMarks(storms, marks)
	out := make(map[string]*clusterv1.StormBase, len(storms))
	for id, base := range storms {
		if needed(base, lost[id]) {
			out[id] = base
		}
	}
	return out
}

// needed reports whether a leader needs the code of a topology whose
// StormBase is base (nil: never decoded) and whose applying LOST mark is
// lost (nil: none).
func needed(base *clusterv1.StormBase, lost *clusterv1.LostMark) bool {
	return cluster.Lives(base) && lost == nil
}

// missing lists the topologies of storms whose code this nimbus lacks,
// verified, sorted (see needing). A copy found corrupt is left to the
// Syncer, whose own check finds it so too, and fetches it again.
func (g Gate) missing(storms map[string]*clusterv1.StormBase, marks map[string]*clusterv1.LostMark) []string {
	var missing []string
	for id, base := range needing(storms, marks) {
		if err := g.Store.Verify(id, base.GetCodeMetaDigest()); err != nil {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	return missing
}
