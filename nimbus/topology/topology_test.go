package topology

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apierr"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

const (
	active      = clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE
	inactive    = clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE
	killed      = clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED
	rebalancing = clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING
)

// Every edit from every status: whether it changes the StormBase, what
// status it leaves, and which it refuses as the wrong status.
func TestEditsByStatus(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	plan := &nimbusv1.RebalanceTopologyRequest{NumWorkers: proto.Int32(3)}
	edits := map[string]Change{
		"activate":   SetStatus(active),
		"deactivate": SetStatus(inactive),
		"kill":       Kill(time.Minute, clock),
		"rebalance":  Rebalance(plan, time.Minute, clock),
		"restart":    RestartWorker("sup-1:6700", "alice", []string{"sup-1:6700"}, clock),
		"log levels": SetLogLevels(&nimbusv1.SetLogConfigRequest{Set: map[string]*clusterv1.LoggerLevel{"ROOT": {TargetLevel: "DEBUG"}}}, clock),
	}
	type outcome struct {
		changed bool
		status  clusterv1.TopologyStatus
		refused bool
	}
	want := map[clusterv1.TopologyStatus]map[string]outcome{
		active:      {"activate": {false, active, false}, "deactivate": {true, inactive, false}, "kill": {true, killed, false}, "rebalance": {true, rebalancing, false}, "restart": {true, active, false}, "log levels": {true, active, false}},
		inactive:    {"activate": {true, active, false}, "deactivate": {false, inactive, false}, "kill": {true, killed, false}, "rebalance": {true, rebalancing, false}, "restart": {true, inactive, false}, "log levels": {true, inactive, false}},
		killed:      {"activate": {false, killed, true}, "deactivate": {false, killed, true}, "kill": {false, killed, false}, "rebalance": {false, killed, true}, "restart": {false, killed, true}, "log levels": {false, killed, true}},
		rebalancing: {"activate": {false, rebalancing, true}, "deactivate": {false, rebalancing, true}, "kill": {true, killed, false}, "rebalance": {false, rebalancing, true}, "restart": {false, rebalancing, true}, "log levels": {true, rebalancing, false}},
	}
	for from, byEdit := range want {
		for name, w := range byEdit {
			base := &clusterv1.StormBase{Name: "t", Status: from, NumWorkers: 1, ComponentExecutors: map[string]int32{"c": 1},
				PendingRebalance: &clusterv1.RebalancePlan{NumWorkers: 2}}
			changed, err := edits[name](base)
			if changed != w.changed || base.GetStatus() != w.status || errors.Is(err, apierr.ErrWrongStatus) != w.refused {
				t.Errorf("%s from %s: changed %v, status %s, err %v; want changed %v, status %s, refused %v",
					name, from, changed, base.GetStatus(), err, w.changed, w.status, w.refused)
			}
		}
	}
}

// A restart counts up its slot's generation, says who asked and when, and
// drops the entries of slots the assignment no longer uses.
func TestRestartWorkerCountsPerSlot(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	base := &clusterv1.StormBase{Name: "t", Status: active, WorkerRestarts: map[string]*clusterv1.WorkerRestart{
		"sup-1:6700": {Generation: 2}, "sup-9:6700": {Generation: 5}, // sup-9 no longer used
	}}
	if _, err := RestartWorker("sup-1:6700", "alice", []string{"sup-1:6700", "sup-2:6701"}, clock)(base); err != nil {
		t.Fatal(err)
	}
	if _, err := RestartWorker("sup-2:6701", "bob", []string{"sup-1:6700", "sup-2:6701"}, clock)(base); err != nil {
		t.Fatal(err)
	}
	got := base.GetWorkerRestarts()
	if len(got) != 2 || got["sup-1:6700"].GetGeneration() != 3 || got["sup-2:6701"].GetGeneration() != 1 ||
		got["sup-1:6700"].GetRequestedBy() != "alice" || got["sup-2:6701"].GetRequestedUnixMs() != now.UnixMilli() {
		t.Errorf("worker restarts %v", got)
	}
}

// Log levels: set with a timeout from now, upper-cased; removed; an entry
// whose timeout passed without a reset level dropped at the next change; a
// repeat changes nothing.
func TestSetLogLevels(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	base := &clusterv1.StormBase{Name: "t", Status: active, LogLevels: map[string]*clusterv1.LoggerLevel{
		"old.expired": {TargetLevel: "DEBUG", TimeoutUnixMs: now.Add(-time.Second).UnixMilli()},
		"old.reset":   {TargetLevel: "DEBUG", ResetLevel: "WARN", TimeoutUnixMs: now.Add(-time.Second).UnixMilli()},
		"gone":        {TargetLevel: "INFO"},
	}}
	req := &nimbusv1.SetLogConfigRequest{
		Set:    map[string]*clusterv1.LoggerLevel{"ROOT": {TargetLevel: " debug ", ResetLevel: "info\t", TimeoutSecs: 30}},
		Remove: []string{"gone"},
	}
	changed, err := SetLogLevels(req, clock)(base)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	got := base.GetLogLevels()
	root := got["ROOT"]
	if len(got) != 2 || got["old.reset"] == nil || root.GetTargetLevel() != "DEBUG" || root.GetResetLevel() != "INFO" ||
		root.GetTimeoutUnixMs() != now.Add(30*time.Second).UnixMilli() || root.GetTimeoutSecs() != 30 {
		t.Fatalf("log levels %v", got)
	}
	if changed, err := SetLogLevels(req, clock)(base); err != nil || changed {
		t.Errorf("the same request again: changed %v, err %v", changed, err)
	}
}

// A kill keeps the status it ended and sets its deadline once; killing a
// killed topology keeps the first deadline.
func TestKillKeepsTheFirstDeadline(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	base := &clusterv1.StormBase{Status: inactive}
	if changed, err := Kill(time.Minute, func() time.Time { return now })(base); !changed || err != nil {
		t.Fatalf("kill: %v, %v", changed, err)
	}
	first := base.GetActionDeadlineUnixMs()
	if first != now.Add(time.Minute).UnixMilli() || base.GetPreviousStatus() != inactive {
		t.Fatalf("deadline %d, previous %s", first, base.GetPreviousStatus())
	}
	if changed, _ := Kill(time.Hour, func() time.Time { return now.Add(time.Second) })(base); changed || base.GetActionDeadlineUnixMs() != first {
		t.Fatalf("a second kill moved the deadline to %d (changed %v)", base.GetActionDeadlineUnixMs(), changed)
	}
}

// The same rebalance again is a no-op; one naming a component the topology
// lacks is refused naming the field; FinishRebalance applies the plan and
// restores the status the rebalance interrupted.
func TestRebalanceAndFinish(t *testing.T) {
	now := func() time.Time { return time.Unix(1_700_000_000, 0) }
	base := &clusterv1.StormBase{Status: inactive, NumWorkers: 1, ComponentExecutors: map[string]int32{"c": 1}}
	req := &nimbusv1.RebalanceTopologyRequest{NumWorkers: proto.Int32(4), ComponentParallelism: map[string]int32{"c": 8}}
	if changed, err := Rebalance(req, time.Minute, now)(base); !changed || err != nil {
		t.Fatalf("rebalance: %v, %v", changed, err)
	}
	if changed, err := Rebalance(proto.CloneOf(req), time.Minute, now)(base); changed || err != nil {
		t.Fatalf("the same rebalance again: %v, %v; want a no-op", changed, err)
	}
	bad := &clusterv1.StormBase{Status: active, ComponentExecutors: map[string]int32{"c": 1}}
	var verr *validate.Error
	if _, err := Rebalance(&nimbusv1.RebalanceTopologyRequest{ComponentParallelism: map[string]int32{"x": 2}}, 0, now)(bad); !errors.As(err, &verr) || verr.Field != `component_parallelism["x"]` {
		t.Fatalf("an unknown component: %v", err)
	}
	if !FinishRebalance(base, 7) {
		t.Fatal("FinishRebalance of a rebalancing topology: false")
	}
	if base.GetStatus() != inactive || base.GetNumWorkers() != 4 || base.GetComponentExecutors()["c"] != 8 ||
		base.GetPendingRebalance() != nil || base.GetActionDeadlineUnixMs() != 0 || base.GetEpoch() != 7 {
		t.Fatalf("after finishing: %v", base)
	}
	if FinishRebalance(base, 8) {
		t.Fatal("FinishRebalance of a topology not rebalancing: true")
	}
}

// Budget.Check refuses, naming the field, a topology whose assignment
// could not fit a node, and passes a small one.
func TestBudgetCheck(t *testing.T) {
	b := NewBudget(1<<20, nil)
	small := &clusterv1.StormBase{Name: "s", Status: active, NumWorkers: 1, ComponentExecutors: map[string]int32{"c": 4}}
	if err := b.Check("spec.components", small); err != nil {
		t.Fatalf("a small topology: %v", err)
	}
	big := &clusterv1.StormBase{Name: "b", Status: active, NumWorkers: 4, ComponentExecutors: map[string]int32{"c": 50_000}}
	var verr *validate.Error
	if err := b.Check("spec.components", big); !errors.As(err, &verr) || verr.Field != "spec.components" {
		t.Fatalf("50,000 executors: %v; want a validation error naming spec.components", err)
	}
}

// Every edit keeps the fields a newer release wrote that this one does not
// know (docs/ARCHITECTURE.md section 18): it changes the StormBase read,
// it does not build another.
func TestEditsKeepUnknownFields(t *testing.T) {
	now := func() time.Time { return time.Unix(1_700_000_000, 0) }
	unknown := protowire.AppendString(protowire.AppendTag(nil, 999, protowire.BytesType), "a newer release's field")
	for name, edit := range map[string]Change{
		"deactivate": SetStatus(inactive),
		"kill":       Kill(time.Minute, now),
		"rebalance":  Rebalance(&nimbusv1.RebalanceTopologyRequest{NumWorkers: proto.Int32(3)}, time.Minute, now),
	} {
		data, err := proto.Marshal(&clusterv1.StormBase{Name: "t", Status: active, NumWorkers: 1, ComponentExecutors: map[string]int32{"c": 1}})
		base := new(clusterv1.StormBase)
		if err == nil {
			err = proto.Unmarshal(append(data, unknown...), base)
		}
		if err != nil {
			t.Fatal(err)
		}
		if changed, err := edit(base); !changed || err != nil {
			t.Fatalf("%s: changed %v, %v", name, changed, err)
		}
		if out, err := proto.Marshal(base); err != nil || !bytes.Contains(out, unknown) {
			t.Errorf("%s dropped the unknown field", name)
		}
	}
}
