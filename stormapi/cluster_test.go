package stormapi

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A supervisor's page shows each worker as its topology's page does: its
// executors, tasks per component and uptime, from the assignment.
func TestSupervisorPageShowsWorkersExecutors(t *testing.T) {
	worker := &nimbusv1.WorkerSummary{TopologyId: "wc-1", SupervisorId: "s1", Host: "h1", Port: 6700, State: "running"}
	exec := func(c string, task int32, uptime int64) *nimbusv1.ExecutorSummary {
		return &nimbusv1.ExecutorSummary{Executor: &clusterv1.Executor{ComponentId: c, TaskStart: task, TaskEnd: task},
			SupervisorId: "s1", Host: "h1", Port: 6700, UptimeSecs: uptime}
	}
	reads := &fakeReads{
		cluster: &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
			Supervisors: []*nimbusv1.SupervisorSummary{{SupervisorId: "s1", Host: "h1", NumWorkers: 2, NumUsedWorkers: 1,
				Workers: []*nimbusv1.WorkerSummary{worker}}},
			Topologies: []*nimbusv1.TopologySummary{{Id: "wc-1", Name: "wc", Owner: "alice"}},
		}},
		infos: map[string]*nimbusv1.GetTopologyInfoResponse{"wc": {
			Topology:  &nimbusv1.TopologySummary{Id: "wc-1", Name: "wc"},
			Executors: []*nimbusv1.ExecutorSummary{exec("count", 1, 90), exec("count", 2, 90), exec("split", 3, 95)},
		}},
	}
	code, out := get(t, newTestAPI(t, reads), "/api/v1/supervisor?id=s1")
	workers, _ := out["workers"].([]any)
	if code != http.StatusOK || len(workers) != 1 {
		t.Fatalf("code %d, workers %v", code, out["workers"])
	}
	w := workers[0].(map[string]any)
	tasks, _ := w["componentNumTasks"].(map[string]any)
	if w["executorsTotal"] != float64(3) || tasks["count"] != float64(2) || tasks["split"] != float64(1) ||
		w["uptimeSeconds"] != float64(95) || w["uptime"] == "0s" {
		t.Fatalf("worker %v, want 3 executors (count 2, split 1) up 95 s", w)
	}

	// A topology the caller may not read: its worker shows, without
	// executors; the page still answers.
	reads.infoErr = status.Error(codes.PermissionDenied, "nimbus: permission denied")
	code, out = get(t, newTestAPI(t, reads), "/api/v1/supervisor?id=s1")
	if workers, _ := out["workers"].([]any); code != http.StatusOK || len(workers) != 1 {
		t.Fatalf("refused topology: code %d, workers %v", code, out["workers"])
	}
}

// REST errors are in plain words, as stormctl prints them: no gRPC
// framing, no code names, no package prefix.
func TestErrorsArePlainWords(t *testing.T) {
	reads := &fakeReads{
		cluster: &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
			Topologies: []*nimbusv1.TopologySummary{{Id: "wc-1", Name: "wc"}},
		}},
		infoErr: status.Error(codes.PermissionDenied, "nimbus: permission denied: bob may not read wc"),
	}
	code, out := get(t, newTestAPI(t, reads), "/api/v1/topology/wc-1")
	if code != http.StatusForbidden || out["errorMessage"] != "permission denied: bob may not read wc" || out["error"] != "403 Forbidden" {
		t.Fatalf("code %d, answer %v", code, out)
	}
}
