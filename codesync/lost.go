package codesync

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A topology whose code no nimbus and no supervisor holds would keep every
// nimbus out of the leader queue for good (invariant 6). After
// nimbus.code.lost.grace.secs of finding it held nowhere, a nimbus marks it
// LOST in /lost/<id>: the mark lifts the block, and the leader neither
// schedules it nor forgets it. Any nimbus that holds the code again
// deletes the mark; only ForgetTopology removes the topology. A mark is
// bound to the code's digest, so a mark for other code is ignored.

// LostMarks returns the marks of lost that apply to storms: the topology
// is there, decodable, and the mark is for the code it names.
func LostMarks(storms map[string]*clusterv1.StormBase, lost map[string]*clusterv1.LostMark) map[string]*clusterv1.LostMark {
	out := map[string]*clusterv1.LostMark{}
	for id, mark := range lost {
		if base := storms[id]; base != nil && mark != nil && bytes.Equal(mark.GetCodeMetaDigest(), base.GetCodeMetaDigest()) {
			out[id] = mark
		}
	}
	return out
}

// heldNowhere is one fetch loop's record of how long the code it fetches
// has been held by no nimbus and no supervisor.
type heldNowhere struct {
	grace  time.Duration // 0: never mark
	since  time.Time     // zero: not in a spell
	marked bool
}

func (s *Syncer) newHeldNowhere() *heldNowhere { return &heldNowhere{grace: s.cfg.LostGrace} }

// observe records a fetch attempt's outcome. Any other outcome than
// ErrHeldNowhere ends the spell: a source that answered, a failure to read
// ZooKeeper (an outage is no evidence), a source that failed. It says
// whether the spell has lasted the grace, and the mark is due.
func (h *heldNowhere) observe(err error, now time.Time) (due bool) {
	if !errors.Is(err, codedistributor.ErrHeldNowhere) {
		h.since, h.marked = time.Time{}, false
		return false
	}
	if h.since.IsZero() {
		h.since = now
	}
	return h.grace > 0 && !h.marked && now.Sub(h.since) >= h.grace
}

// wait caps a retry's backoff so the attempt that may mark comes on time;
// once it is due, a mark that failed is retried after the backoff.
func (h *heldNowhere) wait(backoff time.Duration, now time.Time) time.Duration {
	if h.grace == 0 || h.marked || h.since.IsZero() {
		return backoff
	}
	if due := h.since.Add(h.grace).Sub(now); due > 0 {
		return min(backoff, due)
	}
	return backoff
}

// markLost writes the LOST mark of id, if its StormBase still exists (a
// mark must not outlive its topology: one just killed or forgotten); one
// there already is fine.
func (s *Syncer) markLost(id string, digest []byte, h *heldNowhere) {
	mark := &clusterv1.LostMark{
		CodeMetaDigest: digest, SinceUnixMs: h.since.UnixMilli(), MarkedBy: s.self,
		Reason: fmt.Sprintf("no nimbus and no supervisor has held its code (meta %s) for %v",
			codedistributor.Hex(digest)[:16], h.grace),
	}
	ops := s.cfg.Session.Ops()
	_, err := s.cfg.Session.Multi(ops.CheckStorm(id, cluster.AnyVersion), ops.CreateLost(id, mark))
	switch {
	case err == nil:
		s.log.Warn("topology marked LOST: it no longer blocks leadership and is not scheduled; a nimbus that gets its code back unmarks it, stormctl admin forget removes it",
			"topology", id, "reason", mark.GetReason())
	case errors.Is(err, cluster.ErrNodeExists), errors.Is(err, cluster.ErrNoNode): // marked already; gone
	default:
		s.log.Warn("cannot mark a topology LOST; will retry", "topology", id, "err", err)
		return
	}
	h.marked = true
}

// unmarkHeld deletes the LOST marks of the code this nimbus holds as a
// replica: one it held when it registered, and one another nimbus made
// after (its grace ran out as this one got the code back). A mark is
// deleted only for the digest it names.
func (r *run) unmarkHeld() {
	if r.cfg.Lost == nil {
		return
	}
	for id, mark := range r.cfg.Lost.Snapshot() {
		// Checked again before the mark goes: a replica trusted since it
		// registered may have lost its files behind the store's back.
		if t, ok := r.registered[id]; ok && mark != nil && bytes.Equal(mark.GetCodeMetaDigest(), t.digest) &&
			r.cfg.Store.Verify(id, t.digest) == nil {
			r.unmarkLost(id)
		}
	}
}

// unmarkLost deletes id's LOST mark: this nimbus holds the code.
func (r *run) unmarkLost(id string) {
	_, err := r.cfg.Session.Multi(r.cfg.Session.Ops().DeleteLost(id, cluster.AnyVersion))
	if err == nil {
		r.log.Info("topology no longer LOST: this nimbus holds its code", "topology", id)
	} else if !errors.Is(err, cluster.ErrNoNode) && r.ctx.Err() == nil {
		r.log.Warn("cannot remove a LOST mark", "topology", id, "err", err)
	}
}
