package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Change is an edit of a StormBase: it reports whether it changed
// anything, or why the topology's status forbids it.
type Change func(*clusterv1.StormBase) (bool, error)

// NewStormBase is the StormBase a submission commits.
func NewStormBase(spec *nimbusv1.TopologySpec, digest []byte, epoch int64, now time.Time) *clusterv1.StormBase {
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

// SetStatus moves between ACTIVE and INACTIVE; repeating one is a no-op.
func SetStatus(to clusterv1.TopologyStatus) Change {
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

// Kill marks a topology KILLED, to be removed once wait has passed (from
// when the edit is applied: now is read then). A topology being killed keeps
// its first deadline.
func Kill(wait time.Duration, now func() time.Time) Change {
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

// Rebalance puts an active or inactive topology in REBALANCING with the
// request's plan, applied once wait has passed (from when the edit is
// made). An identical retry is a no-op; another plan while one waits is
// refused.
func Rebalance(req *nimbusv1.RebalanceTopologyRequest, wait time.Duration, now func() time.Time) Change {
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

// RestartWorker asks the supervisor of slot (cluster.SlotKey)
// to restart the worker there: the slot's generation goes up by one, with
// who asked and when. Entries of slots no longer in placed (the slots the
// assignment uses now) are dropped, so the node holds at most one per
// slot. Only an active or inactive topology's workers restart.
func RestartWorker(slot, by string, placed []string, now func() time.Time) Change {
	return func(base *clusterv1.StormBase) (bool, error) {
		switch base.GetStatus() {
		case clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:
		default:
			return false, fmt.Errorf("%w: %s is %s", apierr.ErrWrongStatus, base.GetName(), base.GetStatus())
		}
		for s := range base.GetWorkerRestarts() {
			if !slices.Contains(placed, s) {
				delete(base.WorkerRestarts, s)
			}
		}
		if base.WorkerRestarts == nil {
			base.WorkerRestarts = map[string]*clusterv1.WorkerRestart{}
		}
		base.WorkerRestarts[slot] = &clusterv1.WorkerRestart{
			Generation:      base.GetWorkerRestarts()[slot].GetGeneration() + 1,
			RequestedBy:     by,
			RequestedUnixMs: now().UnixMilli(),
		}
		return true, nil
	}
}

// SetLogLevels applies a SetLogConfig request to a topology's log levels:
// its loggers set (a timeout counted from now), its removals removed, and
// entries whose timeout passed without a reset level dropped. Loggers,
// levels and timeouts were checked (validate.SetLogConfig); levels are
// stored in upper case. A killed topology's levels do not change.
func SetLogLevels(req *nimbusv1.SetLogConfigRequest, now func() time.Time) Change {
	return func(base *clusterv1.StormBase) (bool, error) {
		if base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
			return false, fmt.Errorf("%w: %s is %s", apierr.ErrWrongStatus, base.GetName(), base.GetStatus())
		}
		at := now()
		before := proto.Clone(base).(*clusterv1.StormBase).GetLogLevels()
		if base.LogLevels == nil {
			base.LogLevels = map[string]*clusterv1.LoggerLevel{}
		}
		for name, l := range base.GetLogLevels() {
			if l.GetTimeoutUnixMs() != 0 && l.GetTimeoutUnixMs() <= at.UnixMilli() && l.GetResetLevel() == "" {
				delete(base.LogLevels, name)
			}
		}
		for _, name := range req.GetRemove() {
			delete(base.LogLevels, name)
		}
		for name, l := range req.GetSet() {
			set := &clusterv1.LoggerLevel{
				TargetLevel: canonicalLevel(l.GetTargetLevel()), ResetLevel: canonicalLevel(l.GetResetLevel()),
				TimeoutSecs: l.GetTimeoutSecs(),
			}
			if l.GetTimeoutSecs() > 0 {
				set.TimeoutUnixMs = at.Add(time.Duration(l.GetTimeoutSecs()) * time.Second).UnixMilli()
			}
			base.LogLevels[name] = set
		}
		if len(base.LogLevels) > validate.MaxLoggers {
			return false, validate.Invalid("set", "would leave %d loggers; at most %d", len(base.LogLevels), validate.MaxLoggers)
		}
		return !maps.EqualFunc(before, base.GetLogLevels(), func(a, b *clusterv1.LoggerLevel) bool { return proto.Equal(a, b) }), nil
	}
}

// canonicalLevel is a level as workers' log-level files spell it
// (workerproto.ParseLevel: trimmed, upper case); "" stays "".
func canonicalLevel(s string) string {
	return strings.ToUpper(strings.TrimSpace(s))
}

// FinishRebalance ends a rebalance's wait: the plan's workers and
// parallelism become the topology's, and its status returns to what it
// was. It reports false for a topology that is not rebalancing.
func FinishRebalance(base *clusterv1.StormBase, epoch int64) bool {
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

// Budget is the size ZooKeeper accepts for one node the leader writes
// (validate.ZKNodeBudget of storm.zookeeper.jute.maxbuffer), and the
// longest supervisor id and host an assignment may name. A submission or a
// rebalance is checked against it before anything is written: a StormBase
// or an assignment over it would have ZooKeeper close the leader's
// connection at every attempt to write it (docs/ARCHITECTURE.md section
// 14).
type Budget struct {
	MaxBuffer       int // storm.zookeeper.jute.maxbuffer
	Limit           int // what one node may hold: validate.ZKNodeBudget(MaxBuffer)
	SupervisorIDLen int // the longest supervisor id an assignment is assumed to name
	HostLen         int // and host
}

// NewBudget is the budget for a ZooKeeper of maxBuffer and the
// registered supervisors: the longest id and host among them, or the
// assumed ones (validate.AssumedSupervisorIDLen, AssumedHostLen) if
// longer.
func NewBudget(maxBuffer int, supervisors map[string]*clusterv1.SupervisorInfo) Budget {
	b := Budget{MaxBuffer: maxBuffer, Limit: validate.ZKNodeBudget(maxBuffer),
		SupervisorIDLen: validate.AssumedSupervisorIDLen, HostLen: validate.AssumedHostLen}
	for id, info := range supervisors {
		b.SupervisorIDLen = max(b.SupervisorIDLen, len(id), len(info.GetSupervisorId()))
		b.HostLen = max(b.HostLen, len(info.GetHost()))
	}
	return b
}

// Check refuses, as an error for field, a StormBase whose node, or whose
// assignment once scheduled, could exceed the budget. A rebalancing
// StormBase is checked as it is (the plan included) and as its rebalance
// will leave it.
func (b Budget) Check(field string, base *clusterv1.StormBase) error {
	if err := b.fits(field, "StormBase", int64(widestStormBase(base))); err != nil {
		return err
	}
	if base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING {
		base = proto.CloneOf(base)
		FinishRebalance(base, 0)
		if err := b.fits(field, "StormBase", int64(widestStormBase(base))); err != nil {
			return err
		}
	}
	size := validate.AssignmentBound(base.GetComponentExecutors(), base.GetNumWorkers(), b.SupervisorIDLen, b.HostLen)
	return b.fits(field, "assignment", size)
}

func (b Budget) fits(field, node string, size int64) error {
	if size <= int64(b.Limit) {
		return nil
	}
	return validate.Invalid(field, "the topology's %s would take up to %d bytes in ZooKeeper, over the %d a node may hold "+
		"(%s %d less %d for the write's fence and paths); use fewer executors, fewer or shorter component ids, "+
		"or raise %s on ZooKeeper and on every daemon",
		node, size, b.Limit, configs.KeyZKMaxBuffer, b.MaxBuffer, validate.ZKWriteMargin, configs.KeyZKMaxBuffer)
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

// WithinBudget is edit, refused if what it writes would not fit budget.
func WithinBudget(edit Change, budget Budget, field string) Change {
	return func(base *clusterv1.StormBase) (bool, error) {
		changed, err := edit(base)
		if err != nil || !changed {
			return changed, err
		}
		if err := budget.Check(field, base); err != nil {
			return false, err
		}
		return true, nil
	}
}
