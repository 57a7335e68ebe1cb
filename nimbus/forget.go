package nimbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// ForgetTopology removes a topology marked LOST (codesync/lost.go) in these
// steps: find it, check afresh that it is LOST, that no nimbus registers a
// replica of its code and that no supervisor serves it (the mark may be
// stale: made while the supervisors were cut off, since healed), then
// delete its StormBase, distribution, assignment and mark in one write,
// guarded by the versions read. Any nimbus answers: the wedge it undoes is
// the one without a leader. A leader's write is fenced by its term as
// well; without one it is the fence-free admin path (docs/ARCHITECTURE.md
// invariant 3): a concurrent leader's change to the StormBase changes its
// version and fails the write, and the client is told the topology changed
// meanwhile (changedMeanwhile).
func (s *service) ForgetTopology(ctx context.Context, req *nimbusv1.ForgetTopologyRequest) (*nimbusv1.ForgetTopologyResponse, error) {
	if err := validate.Forget(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	f, err := s.forgetOps(ctx, req.GetName())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	if err := s.askSupervisors(ctx, f); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	fenced, res, err := s.forgetWrite(ctx, f.ops)
	if err != nil {
		return nil, apistatus.ToStatus(fmt.Errorf("nimbus: forget %s: %w", f.id, changedMeanwhile(f, res, err)))
	}
	if err := s.dist.Cleanup(ctx, f.id); err != nil {
		s.log.Warn("code cleanup after forget failed", "topology", f.id, "err", err)
	}
	s.log.Warn("topology forgotten", "topology", f.id, "principal", auth.Who(ctx), "reason", req.GetReason(), "fenced", fenced)
	return &nimbusv1.ForgetTopologyResponse{TopologyId: f.id, Fenced: fenced}, nil
}

// forgetting is what a forget read: the topology, the code it names, the
// write that removes it and the supervisors that may hold that code.
type forgetting struct {
	id     string
	digest []byte
	ops    []cluster.Op
	// what names what ops[i] removes, for the error when a concurrent
	// change fails the write.
	what        []string
	supervisors []codedistributor.Source
}

func (f *forgetting) add(what string, op cluster.Op) {
	f.ops = append(f.ops, op)
	f.what = append(f.what, what)
}

// forgetOps reads what forgetting name removes, each read bounded by ctx,
// and refuses unless it is LOST: the mark is there, for the code the
// StormBase names, and no nimbus registers a replica of that code.
func (s *service) forgetOps(ctx context.Context, name string) (*forgetting, error) {
	ops := s.sess.Ops()
	id, base, baseVersion, err := s.findStorm(ctx, name)
	if err != nil {
		return nil, err
	}
	mark, markVersion, err := s.sess.ReadFor(ctx).Lost(id)
	if errors.Is(err, cluster.ErrNoNode) || (err == nil && !bytes.Equal(mark.GetCodeMetaDigest(), base.GetCodeMetaDigest())) {
		return nil, fmt.Errorf("%w: %s is not LOST: only a topology whose code no nimbus and no supervisor holds may be forgotten (kill it instead)",
			apierr.ErrWrongStatus, id)
	}
	if err != nil {
		return nil, err
	}
	h, err := s.readHolders(ctx, id, base.GetCodeMetaDigest())
	if err != nil {
		return nil, err
	}
	if len(h.holders) > 0 {
		return nil, fmt.Errorf("%w: nimbus %s holds the code of %s again; it is no longer LOST", apierr.ErrWrongStatus, h.holders[0], id)
	}
	f := &forgetting{id: id, digest: base.GetCodeMetaDigest(), supervisors: h.supervisors}
	f.add("its LOST mark", ops.DeleteLost(id, markVersion))
	f.add("its StormBase", ops.DeleteStormAt(id, baseVersion))
	if h.distributed {
		for i, op := range ops.DeleteDistribution(id, h.replicas) { // the replicas first, in order
			what := "its code distribution"
			if i < len(h.replicas) {
				what = "its replica " + h.replicas[i]
			}
			f.add(what, op)
		}
	}
	if h.assigned {
		f.add("its assignment", ops.DeleteAssignment(id))
	}
	return f, nil
}

// holders is what ZooKeeper says about who holds a topology's code.
type holders struct {
	distributed bool     // /code-distributor/<id> exists
	replicas    []string // the replica nodes under it
	holders     []string // those of them that register the digest
	assigned    bool     // /assignments/<id> exists
	supervisors []codedistributor.Source
}

// readHolders reads, each read bounded by ctx, the replicas of id (and
// which hold digest), whether it has an assignment, and the supervisors
// that may hold its code.
func (s *service) readHolders(ctx context.Context, id string, digest []byte) (holders, error) {
	read := s.sess.ReadFor(ctx)
	var h holders
	replicas, err := read.Replicas(id)
	if err != nil && !errors.Is(err, cluster.ErrNoNode) {
		return h, err
	}
	h.distributed = err == nil
	for _, name := range slices.Sorted(maps.Keys(replicas)) {
		h.replicas = append(h.replicas, name)
		if cluster.Holds(replicas[name], digest) {
			h.holders = append(h.holders, name)
		}
	}
	if h.assigned, err = read.HasAssignment(id); err != nil {
		return h, err
	}
	h.supervisors, err = codedistributor.SupervisorSources(read, id, digest)
	return h, err
}

// askSupervisors refuses to forget code a supervisor serves again. It asks
// each supervisor that may hold it for its meta, over connections of their
// own (service.peers.Transient).
func (s *service) askSupervisors(ctx context.Context, f *forgetting) error {
	if len(f.supervisors) == 0 {
		return nil
	}
	return supervisorsHolding(ctx, s.peers.Transient, f.id, f.digest, f.supervisors)
}

// supervisorAskTimeout bounds the questions to the supervisors when the
// request's deadline leaves more: a meta is small.
const supervisorAskTimeout = 10 * time.Second

// supervisorsHolding asks sources at once (codedistributor.AskAll) whether
// they serve id's code with digest, within half of what ctx's deadline
// leaves (the write comes after) and at most supervisorAskTimeout. It
// refuses (ErrWrongStatus) when one does, naming it: the mark is stale and
// lifts by itself once a nimbus recovers the code. It refuses as well when
// one did not answer: it may hold the code.
func supervisorsHolding(ctx context.Context, connect codedistributor.Connect, id string, digest []byte, sources []codedistributor.Source) error {
	budget := supervisorAskTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	src, err := codedistributor.AskAll(ctx, connect, codedistributor.Code{TopologyID: id, Digest: digest}, sources)
	switch {
	case err == nil:
		return fmt.Errorf("%w: %s holds the code of %s again (meta %s): it is no longer LOST, and the mark lifts by itself once a nimbus recovers the code from it",
			apierr.ErrWrongStatus, src, id, codedistributor.Hex(digest))
	case errors.Is(err, codedistributor.ErrHeldNowhere):
		return nil
	}
	return fmt.Errorf("%w: %v: forget refuses while it may hold the code; try again once it answers or is stopped", apierr.ErrWrongStatus, err)
}

// changedMeanwhile says what a forget's failed write means. ZooKeeper's
// NoNode, NotEmpty or BadVersion on one of its ops means that something
// changed between the reads and the write: a nimbus got the code back
// (deleted the mark, registered a replica), a leader killed or rewrote
// the topology. Nothing was removed; that is ErrWrongStatus, naming what
// changed. res is the multi's answer, one per op of f. Other errors are
// returned as they are.
func changedMeanwhile(f *forgetting, res []cluster.MultiResponse, err error) error {
	var how string
	switch {
	case errors.Is(err, cluster.ErrNoNode):
		how = "was removed"
	case errors.Is(err, cluster.ErrNotEmpty):
		how = "gained a replica"
	case errors.Is(err, cluster.ErrBadVersion):
		how = "was rewritten"
	default:
		return err
	}
	what := "a node it removes"
	for i, r := range res {
		if r.Error != nil {
			if i < len(f.what) {
				what = f.what[i]
			}
			break
		}
	}
	return fmt.Errorf("%w: %s changed while it was being forgotten: %s %s (%v); nothing was removed: check that it is still LOST and try again",
		apierr.ErrWrongStatus, f.id, what, how, err)
}

// findStorm finds name, an id or a name, and reads its StormBase afresh.
func (s *service) findStorm(ctx context.Context, name string) (string, *clusterv1.StormBase, int32, error) {
	id := name
	if _, ok := s.view.Storms.Snapshot()[name]; !ok {
		var err error
		if id, _, err = s.view.ByName(name); err != nil {
			return "", nil, 0, err
		}
	}
	base, version, err := s.sess.ReadFor(ctx).Storm(id)
	if errors.Is(err, cluster.ErrNoNode) {
		return "", nil, 0, fmt.Errorf("%w: %q", apierr.ErrNotFound, name)
	}
	return id, base, version, err
}

// forgetWrite applies ops: fenced by this nimbus's term if it leads, else
// guarded only by the versions the ops check. It says which, and returns
// the multi's answer, one per op (the fence's own is dropped).
func (s *service) forgetWrite(ctx context.Context, ops []cluster.Op) (fenced bool, res []cluster.MultiResponse, err error) {
	if term := s.election.Current(); term != nil {
		res, err := term.MultiCtx(ctx, ops...)
		if len(res) == len(ops)+1 {
			res = res[1:]
		}
		return true, res, err
	}
	res, err = s.sess.MultiFor(ctx, "forget", ops...)
	return false, res, err
}
