package nimbus

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The topology lifecycle. A topology's status lives in its StormBase,
// /storms/<id>, and only the leader changes it, each time in a fenced
// write. This file holds every change to a StormBase; the I/O around each
// is named beside it:
//
//	from                  to                      when                          change          written by
//	(none)                ACTIVE or INACTIVE      a submission commits          newStormBase    service.submit (submit.go)
//	ACTIVE, INACTIVE      the other               activate, deactivate          setStatus       service.transition (service.go)
//	any but KILLED        KILLED                  kill; removal after wait_secs kill            service.transition
//	KILLED                (removed)               the wait is over              -               duties.removeTopology (leading.go)
//	ACTIVE, INACTIVE      REBALANCING             rebalance; plan and deadline  rebalance       service.transition
//	REBALANCING           its previous status     the wait is over              finishRebalance duties.applyRebalance (leading.go)
//
// A deadline is a wall-clock time in the StormBase, so a new leader
// honours the wait its predecessor promised. KILLED and REBALANCING
// topologies keep their slots until their wait ends (schedule.go).

// change is an edit of a StormBase: it reports whether it changed
// anything, or why the topology's status forbids it.
type change func(*clusterv1.StormBase) (bool, error)

// newStormBase is the StormBase a submission commits.
func newStormBase(spec *nimbusv1.TopologySpec, digest []byte, epoch int64, now time.Time) *clusterv1.StormBase {
	base := &clusterv1.StormBase{
		Name:               spec.GetName(),
		Owner:              spec.GetOwner(),
		Status:             clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
		LaunchTimeUnixSecs: now.Unix(),
		NumWorkers:         spec.GetNumWorkers(),
		ComponentExecutors: map[string]int32{},
		CodeMetaDigest:     digest,
		Epoch:              epoch,
	}
	if spec.GetInitialStatus() == nimbusv1.InitialStatus_INITIAL_STATUS_INACTIVE {
		base.Status = clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE
	}
	for _, c := range spec.GetComponents() {
		base.ComponentExecutors[c.GetId()] = c.GetParallelism()
		if c.GetKind() == nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT {
			base.SpoutIds = append(base.SpoutIds, c.GetId())
		}
	}
	slices.Sort(base.SpoutIds)
	return base
}

// setStatus moves between ACTIVE and INACTIVE; repeating one is a no-op.
func setStatus(to clusterv1.TopologyStatus) change {
	return func(base *clusterv1.StormBase) (bool, error) {
		switch base.GetStatus() {
		case to:
			return false, nil
		case clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:
			base.Status = to
			return true, nil
		default:
			return false, fmt.Errorf("%w: %s is %s", apierr.ErrWrongStatus, base.GetName(), base.GetStatus())
		}
	}
}

// kill marks a topology KILLED, to be removed once wait has passed (from
// when the change is made: now is read then). A topology being killed keeps
// its first deadline.
func kill(wait time.Duration, now func() time.Time) change {
	return func(base *clusterv1.StormBase) (bool, error) {
		if base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
			return false, nil
		}
		base.PreviousStatus = base.GetStatus()
		base.Status = clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED
		base.ActionDeadlineUnixMs = now().Add(wait).UnixMilli()
		return true, nil
	}
}

// rebalance puts an active or inactive topology in REBALANCING with the
// request's plan, applied once wait has passed (from when the change is
// made). An identical retry is a no-op; another plan while one waits is
// refused.
func rebalance(req *nimbusv1.RebalanceTopologyRequest, wait time.Duration, now func() time.Time) change {
	return func(base *clusterv1.StormBase) (bool, error) {
		plan := &clusterv1.RebalancePlan{NumWorkers: req.GetNumWorkers(), ComponentExecutors: req.GetComponentParallelism()}
		switch base.GetStatus() {
		case clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
			if proto.Equal(base.GetPendingRebalance(), plan) {
				return false, nil // a retry of the same request
			}
			return false, fmt.Errorf("%w: %s is already rebalancing to another plan", apierr.ErrWrongStatus, base.GetName())
		case clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:
		default:
			return false, fmt.Errorf("%w: %s is %s", apierr.ErrWrongStatus, base.GetName(), base.GetStatus())
		}
		for c := range req.GetComponentParallelism() {
			if _, ok := base.GetComponentExecutors()[c]; !ok {
				return false, validate.Invalid(fmt.Sprintf("component_parallelism[%q]", c), "the topology has no such component")
			}
		}
		base.PreviousStatus = base.GetStatus()
		base.Status = clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING
		base.ActionDeadlineUnixMs = now().Add(wait).UnixMilli()
		base.PendingRebalance = plan
		return true, nil
	}
}

// finishRebalance ends a rebalance's wait: the plan's workers and
// parallelism become the topology's, and its status returns to what it
// was. It reports false for a topology that is not rebalancing.
func finishRebalance(base *clusterv1.StormBase, epoch int64) bool {
	if base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING {
		return false
	}
	plan := base.GetPendingRebalance()
	if plan.GetNumWorkers() > 0 {
		base.NumWorkers = plan.GetNumWorkers()
	}
	for c, n := range plan.GetComponentExecutors() {
		base.ComponentExecutors[c] = n
	}
	base.Status, base.PreviousStatus = base.GetPreviousStatus(), clusterv1.TopologyStatus_TOPOLOGY_STATUS_UNSPECIFIED
	base.PendingRebalance, base.ActionDeadlineUnixMs, base.Epoch = nil, 0, epoch
	return true
}

// zkBudget is the size ZooKeeper accepts for one node the leader writes
// (validate.ZKNodeBudget of storm.zookeeper.jute.maxbuffer), and the
// longest supervisor id and host an assignment may name. A submission or a
// rebalance is checked against it before anything is written: a StormBase
// or an assignment over it would have ZooKeeper close the leader's
// connection at every attempt to write it (docs/ARCHITECTURE.md section
// 14).
type zkBudget struct {
	maxBuffer       int // storm.zookeeper.jute.maxbuffer
	limit           int
	supervisorIDLen int
	hostLen         int
}

// newZKBudget is the budget for a ZooKeeper of maxBuffer and the
// registered supervisors: the longest id and host among them, or the
// assumed ones (validate.AssumedSupervisorIDLen, AssumedHostLen) if
// longer.
func newZKBudget(maxBuffer int, supervisors map[string]*clusterv1.SupervisorInfo) zkBudget {
	b := zkBudget{maxBuffer: maxBuffer, limit: validate.ZKNodeBudget(maxBuffer),
		supervisorIDLen: validate.AssumedSupervisorIDLen, hostLen: validate.AssumedHostLen}
	for id, info := range supervisors {
		b.supervisorIDLen = max(b.supervisorIDLen, len(id), len(info.GetSupervisorId()))
		b.hostLen = max(b.hostLen, len(info.GetHost()))
	}
	return b
}

// check refuses, as an error for field, a StormBase whose node, or whose
// assignment once scheduled, could exceed the budget. A rebalancing
// StormBase is checked as it is (the plan included) and as its rebalance
// will leave it.
func (b zkBudget) check(field string, base *clusterv1.StormBase) error {
	if err := b.fits(field, "StormBase", int64(widestStormBase(base))); err != nil {
		return err
	}
	if base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING {
		base = proto.CloneOf(base)
		finishRebalance(base, 0)
		if err := b.fits(field, "StormBase", int64(widestStormBase(base))); err != nil {
			return err
		}
	}
	size := validate.AssignmentBound(base.GetComponentExecutors(), base.GetNumWorkers(), b.supervisorIDLen, b.hostLen)
	return b.fits(field, "assignment", size)
}

func (b zkBudget) fits(field, node string, size int64) error {
	if size <= int64(b.limit) {
		return nil
	}
	return validate.Invalid(field, "the topology's %s would take up to %d bytes in ZooKeeper, over the %d a node may hold "+
		"(%s %d less %d for the write's fence and paths); use fewer executors, fewer or shorter component ids, "+
		"or raise %s on ZooKeeper and on every daemon",
		node, size, b.limit, configs.KeyZKMaxBuffer, b.maxBuffer, validate.ZKWriteMargin, configs.KeyZKMaxBuffer)
}

// widestStormBase is the size of base at its largest through the edits it
// may still see: a kill adds a previous status and a deadline, every write
// sets the epoch; each is counted at its widest encoding.
func widestStormBase(base *clusterv1.StormBase) int {
	b := proto.CloneOf(base)
	b.Epoch, b.ActionDeadlineUnixMs = -1, -1 // negative varints take 10 bytes
	b.PreviousStatus = clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING
	if b.Status == clusterv1.TopologyStatus_TOPOLOGY_STATUS_UNSPECIFIED {
		b.Status = clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING
	}
	return proto.Size(b)
}

// withinBudget is edit, refused if what it writes would not fit budget.
func withinBudget(edit change, budget zkBudget, field string) change {
	return func(base *clusterv1.StormBase) (bool, error) {
		changed, err := edit(base)
		if err != nil || !changed {
			return changed, err
		}
		if err := budget.check(field, base); err != nil {
			return false, err
		}
		return true, nil
	}
}
