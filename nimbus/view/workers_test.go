package view

import (
	"testing"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func execAt(component string, task int32, sup string, port int32) *clusterv1.ExecutorAssignment {
	return &clusterv1.ExecutorAssignment{
		Executor: &clusterv1.Executor{ComponentId: component, TaskStart: task, TaskEnd: task},
		Slot:     &clusterv1.Slot{SupervisorId: sup, Port: port},
	}
}

func TestAssignedWorkersJoinsHeartbeatsBySlotAndTopology(t *testing.T) {
	three := int32(3)
	sups := map[string]*clusterv1.SupervisorInfo{
		"sup-a": {Host: "a", Workers: []*clusterv1.WorkerState{
			{TopologyId: "t-1", Port: 6700, State: "running", Pid: 42},
			{TopologyId: "t-1", Port: 6701, State: "backoff", Restarts: 4, LastExitCode: &three,
				LastError: "exit status 3", LastErrorUnixMs: 1000, LogTail: "boom"},
			{TopologyId: "t-other", Port: 6702, State: "running"}, // another topology's, on a slot t-1 was given
		}},
		"sup-b": nil, // registered, payload unreadable
	}
	a := &clusterv1.Assignment{
		SupervisorHosts: map[string]string{"sup-a": "a", "sup-b": "b", "sup-gone": "g"},
		Executors: []*clusterv1.ExecutorAssignment{
			execAt("spout", 1, "sup-a", 6701), execAt("bolt", 2, "sup-a", 6700), execAt("bolt", 3, "sup-a", 6700),
			execAt("bolt", 4, "sup-a", 6702), execAt("bolt", 5, "sup-b", 6700), execAt("bolt", 6, "sup-gone", 6700),
		},
	}
	for _, tails := range []bool{false, true} {
		got := assignedWorkers("t-1", a, sups, indexWorkers(supervisorsOf(a, sups)), tails)
		want := []struct {
			sup, state string
			port, n    int32
		}{
			{"sup-a", "running", 6700, 2}, {"sup-a", "backoff", 6701, 1}, {"sup-a", "pending", 6702, 1},
			{"sup-b", "pending", 6700, 1}, {"sup-gone", "lost", 6700, 1},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d workers: %v", len(got), got)
		}
		for i, w := range want {
			g := got[i]
			if g.GetSupervisorId() != w.sup || g.GetPort() != w.port || g.GetState() != w.state || g.GetNumExecutors() != w.n || g.GetTopologyId() != "t-1" {
				t.Errorf("worker %d = %v, want %+v", i, g, w)
			}
		}
		failing := got[1]
		if failing.GetRestarts() != 4 || failing.GetLastExitCode() != 3 || failing.LastExitCode == nil ||
			failing.GetLastError() != "exit status 3" || failing.GetLastErrorUnixMs() != 1000 || failing.GetHost() != "a" {
			t.Errorf("failing worker = %v", failing)
		}
		if wantTail := map[bool]string{true: "boom"}[tails]; failing.GetLogTail() != wantTail {
			t.Errorf("tails %v: log tail %q", tails, failing.GetLogTail())
		}
		if got[0].LastExitCode != nil {
			t.Errorf("a worker that never exited has exit code %d", got[0].GetLastExitCode())
		}
	}
}

func TestCountWorkersAndMissingSlots(t *testing.T) {
	active, killed := clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED
	workers := []*nimbusv1.WorkerSummary{{State: "running"}, {State: "backoff"}, {State: "pending"}}
	cases := []struct {
		name    string
		base    *clusterv1.StormBase
		workers []*nimbusv1.WorkerSummary
		missing int32
	}{
		{"placed", &clusterv1.StormBase{Status: active, NumWorkers: 3, ComponentExecutors: map[string]int32{"s": 4}}, workers, 0},
		{"short", &clusterv1.StormBase{Status: active, NumWorkers: 5, ComponentExecutors: map[string]int32{"s": 4, "b": 4}}, workers, 2},
		{"fewer executors than workers", &clusterv1.StormBase{Status: active, NumWorkers: 8, ComponentExecutors: map[string]int32{"s": 3}}, workers, 0},
		{"unplaced", &clusterv1.StormBase{Status: active, NumWorkers: 2, ComponentExecutors: map[string]int32{"s": 2}}, nil, 2},
		{"killed", &clusterv1.StormBase{Status: killed, NumWorkers: 2, ComponentExecutors: map[string]int32{"s": 2}}, nil, 0},
		{"more than wanted", &clusterv1.StormBase{Status: active, NumWorkers: 1, ComponentExecutors: map[string]int32{"s": 2}}, workers, 0},
	}
	for _, c := range cases {
		ts := &nimbusv1.TopologySummary{}
		countWorkers(ts, c.base, c.workers)
		if ts.GetMissingSlots() != c.missing || ts.GetNumWorkersAssigned() != int32(len(c.workers)) {
			t.Errorf("%s: missing %d assigned %d, want %d and %d", c.name, ts.GetMissingSlots(), ts.GetNumWorkersAssigned(), c.missing, len(c.workers))
		}
		if len(c.workers) == 3 && (ts.GetNumWorkersRunning() != 1 || ts.GetNumWorkersFailing() != 1) {
			t.Errorf("%s: running %d failing %d", c.name, ts.GetNumWorkersRunning(), ts.GetNumWorkersFailing())
		}
	}
}

// A refresh is due at most once per period, less a tenth of slack (a
// ticker at the period may fire a moment early).
func TestHeartbeatReadsAtMostOncePerPeriod(t *testing.T) {
	h := &heartbeatReads{every: time.Second}
	t0 := time.Unix(100, 0)
	if !h.due(t0) || h.due(t0) || h.due(t0.Add(899*time.Millisecond)) || !h.due(t0.Add(900*time.Millisecond)) ||
		h.due(t0.Add(1700*time.Millisecond)) || !h.due(t0.Add(1800*time.Millisecond)) {
		t.Fatal("due not once per period")
	}
	if (*heartbeatReads)(nil).due(t0) {
		t.Fatal("nil is due")
	}
}

func TestLogLink(t *testing.T) {
	if got := LogLink("", "t-1-1", 6700); got != "" {
		t.Fatalf("no logviewer: %q", got)
	}
	want := "https://host-1:8000/api/v1/log?file=wc-1-1700000000%2F6700%2Fworker.log"
	if got := LogLink("https://host-1:8000", "wc-1-1700000000", 6700); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := LogLink("http://host-1:8000/logs/", "t-1-1", 6700); got != "http://host-1:8000/logs/api/v1/log?file=t-1-1%2F6700%2Fworker.log" {
		t.Fatalf("under a path: %q", got)
	}
	// What a supervisor registers is not trusted to be a link.
	for _, bad := range []string{"javascript:alert(1)", "data:text/html,x", "//host-1:8000", "https://", "https://u@host-1:8000", "https://host-1:8000?x=1"} {
		if got := LogLink(bad, "t-1-1", 6700); got != "" {
			t.Errorf("logviewer_url %q gave the link %q, want none", bad, got)
		}
		if got := logviewerURL(&clusterv1.SupervisorInfo{LogviewerUrl: bad}); got != "" {
			t.Errorf("logviewer_url %q shown as %q, want none", bad, got)
		}
	}
}
