package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func testTopology() *nimbusv1.GetTopologyInfoResponse {
	return &nimbusv1.GetTopologyInfoResponse{
		Topology: &nimbusv1.TopologySummary{
			Id: "wordcount-1-1700000000", Name: "wordcount", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
			Owner: "alice", NumExecutors: 3, NumWorkers: 2, UptimeSecs: 45, ReplicationCount: 2,
			NumWorkersAssigned: 2, NumWorkersRunning: 2,
		},
		Workers: []*nimbusv1.WorkerSummary{
			{SupervisorId: "s1", Host: "worker-1", Port: 6700, State: "running", NumExecutors: 1},
			{SupervisorId: "s2", Host: "worker-2", Port: 6701, State: "running", Restarts: 1, NumExecutors: 1,
				LastExitSignal: "killed", LastError: "signal: killed", LastErrorUnixMs: time.Now().Add(-time.Hour).UnixMilli()},
		},
		Executors: []*nimbusv1.ExecutorSummary{
			{Executor: &clusterv1.Executor{ComponentId: "split", TaskStart: 3, TaskEnd: 4}, SupervisorId: "s2", Host: "worker-2", Port: 6701},
			{Executor: &clusterv1.Executor{ComponentId: "count", TaskStart: 1, TaskEnd: 1}, SupervisorId: "s1", Host: "worker-1", Port: 6700},
			{Executor: &clusterv1.Executor{ComponentId: "split", TaskStart: 2, TaskEnd: 2}}, // not placed yet
		},
		Replicas: []*nimbusv1.ReplicaSummary{
			{Host: "nimbus-1.example.com", Port: 6627},
			{Host: "::1", Port: 6628},
		},
		CodeMetaDigest:       []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xff, 0xff},
		ComponentParallelism: map[string]int32{"split": 2, "count": 1},
	}
}

func testTopologies() *nimbusv1.ClusterSummary {
	c := testCluster()
	c.Topologies = []*nimbusv1.TopologySummary{
		testTopology().GetTopology(),
		{Id: "x-2-1700000001", Name: "x", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED, NumWorkers: 1, NumExecutors: 1, UptimeSecs: 3700, ReplicationCount: 1, Owner: "bob"},
	}
	return c
}

func TestRunList(t *testing.T) {
	cluster := testTopologies()
	addr := serve(t, cluster)

	got := runOK(t, "--seeds", addr, "list")
	want := "" +
		"NAME       ID                      STATUS  WORKERS  EXECUTORS  REPLICAS  UPTIME  OWNER\n" +
		"wordcount  wordcount-1-1700000000  active  2/2      3          2         45s     alice\n" +
		"x          x-2-1700000001          killed  0/0      1          1         1h1m    bob\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	var list nimbusv1.ClusterSummary
	unmarshal(t, runOK(t, "--seeds", addr, "-o", "json", "list"), &list)
	if !proto.Equal(&list, &nimbusv1.ClusterSummary{Topologies: cluster.GetTopologies()}) {
		t.Errorf("json: got %v", &list)
	}

	if got := runOK(t, "--seeds", serve(t, testCluster()), "list"); got != "(none)\n" {
		t.Errorf("no topologies: got %q", got)
	}
}

func TestRunTopology(t *testing.T) {
	info := testTopology()
	addr := reader(testCluster(), map[string]*nimbusv1.GetTopologyInfoResponse{"wordcount": info}).Start(t)

	got := runOK(t, "--seeds", addr, "topology", "wordcount")
	want := "" +
		"name:               wordcount\n" +
		"id:                 wordcount-1-1700000000\n" +
		"status:             active\n" +
		"owner:              alice\n" +
		"workers:            2\n" +
		"executors:          3\n" +
		"components:         count=1, split=2\n" +
		"uptime:             45s\n" +
		"replication count:  2\n" +
		"digest:             0123456789abcdef\n" +
		"\n" +
		"REPLICAS\n" +
		"HOST:PORT\n" +
		"nimbus-1.example.com:6627\n" +
		"[::1]:6628\n" +
		"\n" +
		"EXECUTORS\n" +
		"COMPONENT  TASKS  HOST:PORT\n" +
		"count      1      worker-1:6700\n" +
		"split      2      -\n" +
		"split      3-4    worker-2:6701\n" +
		"\n" +
		"COUNTS (window :all-time)\n" +
		"counts:  no data: no worker of this topology reported any\n" +
		"\n" +
		"WORKERS\n" +
		"status:  active\n" +
		"HOST:PORT      STATE    RESTARTS  LAST EXIT      LAST ERROR      WHEN\n" +
		"worker-1:6700  running  0         -              -               -\n" +
		"worker-2:6701  running  1         signal killed  signal: killed  1h0m ago\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	var resp nimbusv1.GetTopologyInfoResponse
	unmarshal(t, runOK(t, "--seeds", addr, "-o", "json", "topology", "wordcount"), &resp)
	if !proto.Equal(&resp, info) {
		t.Errorf("json: got %v, want %v", &resp, info)
	}

	stderr := runFails(t, exitNotFound, "--seeds", addr, "topology", "nosuch")
	if want := "stormctl: topology nosuch: topology not found\n"; stderr != want {
		t.Errorf("unknown name: stderr %q, want %q", stderr, want)
	}
}

func TestRunTopologyEmpty(t *testing.T) {
	info := &nimbusv1.GetTopologyInfoResponse{Topology: &nimbusv1.TopologySummary{Name: "new", Id: "new-3-1"}}
	addr := reader(nil, map[string]*nimbusv1.GetTopologyInfoResponse{"new": info}).Start(t)
	got := runOK(t, "--seeds", addr, "topology", "new")
	want := "" +
		"name:               new\n" +
		"id:                 new-3-1\n" +
		"status:             unspecified\n" +
		"owner:              -\n" +
		"workers:            0\n" +
		"executors:          0\n" +
		"components:         -\n" +
		"uptime:             0s\n" +
		"replication count:  0\n" +
		"digest:             -\n" +
		"\n" +
		"REPLICAS\n" +
		"(none)\n" +
		"\n" +
		"EXECUTORS\n" +
		"(none)\n" +
		"\n" +
		"COUNTS (window :all-time)\n" +
		"counts:  no data: no worker of this topology reported any\n" +
		"\n" +
		"WORKERS\n" +
		"status:  unspecified\n" +
		"(none)\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRunReadUsageErrors(t *testing.T) {
	addr := testcluster.ClosedAddr(t) // a usage error makes no RPC, so nothing need listen
	for _, args := range [][]string{
		{"topology"},
		{"topology", "a", "b"},
		{"nimbuses", "extra"},
		{"cluster", "extra"},
		{"list", "--page-size", "-1"},
	} {
		runFails(t, exitUsage, append([]string{"--seeds", addr}, args...)...)
	}
}

func TestTopologyStatusTellsTheTruth(t *testing.T) {
	active, inactive := clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE
	for _, c := range []struct {
		t    *nimbusv1.TopologySummary
		want string
	}{
		{&nimbusv1.TopologySummary{Status: active, NumWorkersAssigned: 2, NumWorkersRunning: 2}, "active"},
		{&nimbusv1.TopologySummary{Status: active, NumWorkersAssigned: 2, NumWorkersRunning: 1, NumWorkersFailing: 1}, "active, 1/2 workers failing"},
		{&nimbusv1.TopologySummary{Status: active, NumWorkersAssigned: 1, NumWorkersFailing: 1}, "active, 1/1 worker failing"},
		{&nimbusv1.TopologySummary{Status: active, NumWorkersAssigned: 3, NumWorkersRunning: 1, NumWorkersFailing: 1}, "active, 1/3 workers failing, 1/3 workers starting"},
		{&nimbusv1.TopologySummary{Status: active, NumWorkersAssigned: 1, NumWorkersRunning: 1, MissingSlots: 1}, "active, lacks 1 slot"},
		{&nimbusv1.TopologySummary{Status: active, MissingSlots: 2}, "active, lacks 2 slots"},
		{&nimbusv1.TopologySummary{Status: inactive, NumWorkersAssigned: 2, NumWorkersFailing: 2}, "inactive, 2/2 workers failing"},
		{&nimbusv1.TopologySummary{Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED, NumWorkersAssigned: 2, NumWorkersFailing: 2}, "killed"},
		{&nimbusv1.TopologySummary{Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING, MissingSlots: 2}, "rebalancing"},
	} {
		if got := topologyStatus(c.t); got != c.want {
			t.Errorf("%v: %q, want %q", c.t, got, c.want)
		}
	}
}

func TestRunListAndTopologyShowFailingWorkers(t *testing.T) {
	three := int32(3)
	info := &nimbusv1.GetTopologyInfoResponse{
		Topology: &nimbusv1.TopologySummary{Id: "bad-1-1", Name: "bad", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
			NumWorkers: 3, NumExecutors: 3, NumWorkersAssigned: 2, NumWorkersRunning: 1, NumWorkersFailing: 1, MissingSlots: 1},
		Workers: []*nimbusv1.WorkerSummary{
			{Host: "h1", Port: 6700, State: "running"},
			{Host: "h2", Port: 6700, State: "backoff", Restarts: 4, LastExitCode: &three, LastError: "exit status 3",
				LastErrorUnixMs: time.Now().Add(-5 * time.Second).UnixMilli(), LogTail: "starting\nboom"},
		},
	}
	cluster := testCluster()
	cluster.Topologies = []*nimbusv1.TopologySummary{info.GetTopology()}
	cluster.Supervisors[0].Workers = info.GetWorkers()[1:]
	f := reader(cluster, map[string]*nimbusv1.GetTopologyInfoResponse{"bad": info})
	addr := f.Start(t)

	list := runOK(t, "--seeds", addr, "list")
	if !strings.Contains(list, "active, 1/2 workers failing, lacks 1 slot  1/2") {
		t.Errorf("list:\n%s", list)
	}
	sups := runOK(t, "--seeds", addr, "supervisors")
	if lines := strings.Split(sups, "\n"); !strings.Contains(lines[0], "BACKOFF") || len(strings.Fields(lines[1])) < 6 || strings.Fields(lines[1])[5] != "1" {
		t.Errorf("supervisors:\n%s", sups)
	}

	top := runOK(t, "--seeds", addr, "topology", "bad")
	for _, want := range []string{
		"status:  active, 1/2 workers failing, lacks 1 slot\n",
		"h2:6700    backoff  4         exit 3     exit status 3  5s ago\n",
	} {
		if !strings.Contains(top, want) {
			t.Errorf("topology lacks %q:\n%s", want, top)
		}
	}
	if strings.Contains(top, "boom") {
		t.Errorf("log tail without --logs:\n%s", top)
	}
	if req := f.Requests("GetTopologyInfo"); len(req) == 0 || req[len(req)-1].(*nimbusv1.GetTopologyInfoRequest).GetIncludeLogTail() {
		t.Errorf("requests %v", req)
	}

	top = runOK(t, "--seeds", addr, "topology", "bad", "--logs")
	if !strings.Contains(top, "\nLOG h2:6700 (last lines, not redacted)\n  starting\n  boom\n") {
		t.Errorf("topology --logs:\n%s", top)
	}
	// The tail comes from the workers' logviewers (these have no log
	// link; an older supervisor's heartbeat tail is shown as it is), not
	// from the nimbus, which would ask for the right to read the conf.
	if req := f.Requests("GetTopologyInfo"); req[len(req)-1].(*nimbusv1.GetTopologyInfoRequest).GetIncludeLogTail() {
		t.Errorf("--logs asked the nimbus for the tail: %v", req[len(req)-1])
	}
}

// topology --conf shows the effective conf the nimbus answers, as a table
// or as JSON; --conf and --logs do not go together.
func TestRunTopologyConf(t *testing.T) {
	conf := &nimbusv1.GetTopologyConfResponse{TopologyId: "wordcount-1-1700000000", Entries: []*nimbusv1.ConfEntry{
		{Key: "db.password", Value: "<redacted>", Source: "topology", Redacted: true},
		{Key: "topology.message.timeout.secs", Value: "5", Source: "topology"},
		{Key: "topology.min.replication.count", Value: "1", Source: "nimbus"},
		{Key: "topology.workers", Value: "2", Source: "spec.num_workers"},
	}}
	fake := reader(testCluster(), nil)
	fake.OnGetTopologyConf = func(req *nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error) {
		if req.GetName() != "wordcount" {
			return nil, errNotFound
		}
		return conf, nil
	}
	addr := fake.Start(t)

	got := runOK(t, "--seeds", addr, "topology", "wordcount", "--conf")
	want := "" +
		"KEY                             VALUE       SOURCE\n" +
		"db.password                     <redacted>  topology\n" +
		"topology.message.timeout.secs   5           topology\n" +
		"topology.min.replication.count  1           nimbus\n" +
		"topology.workers                2           spec.num_workers\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	var resp nimbusv1.GetTopologyConfResponse
	unmarshal(t, runOK(t, "--seeds", addr, "-o", "json", "topology", "wordcount", "--conf"), &resp)
	if !proto.Equal(&resp, conf) {
		t.Errorf("json: got %v, want %v", &resp, conf)
	}
	if fake.Calls("GetTopologyInfo") != 0 {
		t.Error("--conf asked for the topology's info too")
	}
	if code, _, _ := runArgs("--seeds", addr, "topology", "nosuch", "--conf"); code == exitOK {
		t.Error("an unknown topology's conf: exit 0")
	}
	if code, _, _ := runArgs("--seeds", addr, "topology", "wordcount", "--conf", "--logs"); code == exitOK {
		t.Error("--conf with --logs: exit 0")
	}
}

// list and supervisors ask only for their part, with the names given, and
// read every page: a cluster of thousands comes in small answers.
func TestRunListReadsPages(t *testing.T) {
	topologies := testTopologies().GetTopologies()
	pages := []*nimbusv1.GetClusterInfoResponse{
		{Cluster: &nimbusv1.ClusterSummary{Topologies: topologies[:1]}, NextPageToken: "page-2"},
		{Cluster: &nimbusv1.ClusterSummary{Topologies: topologies[1:], NumTopologies: 2}},
	}
	calls := 0
	f := &fakenimbus.Server{OnGetClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		calls++
		return pages[(calls-1)%len(pages)], nil
	}}
	addr := f.Start(t)
	got := runOK(t, "--seeds", addr, "list", "--page-size", "1", "wordcount", "x")
	want := "" +
		"NAME       ID                      STATUS  WORKERS  EXECUTORS  REPLICAS  UPTIME  OWNER\n" +
		"wordcount  wordcount-1-1700000000  active  2/2      3          2         45s     alice\n" +
		"x          x-2-1700000001          killed  0/0      1          1         1h1m    bob\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	reqs := f.Requests("GetClusterInfo")
	if len(reqs) != 2 {
		t.Fatalf("%d GetClusterInfo calls, want 2 (one per page)", len(reqs))
	}
	for i, wantToken := range []string{"", "page-2"} {
		req := reqs[i].(*nimbusv1.GetClusterInfoRequest)
		if !req.GetOmitNimbuses() || !req.GetOmitSupervisors() || req.GetOmitTopologies() || req.GetPageSize() != 1 ||
			req.GetPageToken() != wantToken || !slices.Equal(req.GetTopologies(), []string{"wordcount", "x"}) {
			t.Errorf("request %d: %v", i, req)
		}
	}

	runOK(t, "--seeds", addr, "supervisors", "worker-1")
	req := f.Requests("GetClusterInfo")[2].(*nimbusv1.GetClusterInfoRequest)
	if !req.GetOmitNimbuses() || !req.GetOmitTopologies() || req.GetOmitSupervisors() || req.GetPageSize() != defaultPageSize ||
		!slices.Equal(req.GetSupervisors(), []string{"worker-1"}) {
		t.Errorf("supervisors request: %v", req)
	}
}

func TestRunClusterSummary(t *testing.T) {
	c := testCluster()
	c.NumTopologies, c.NumSupervisors, c.NumSlots, c.NumUsedSlots = 5000, 4000, 16000, 5000
	c.LostTopologies = []string{"gone-1-1"}
	f := reader(c, nil)
	addr := f.Start(t)
	got := runOK(t, "--seeds", addr, "cluster", "--summary")
	for _, line := range []string{"LOST: gone-1-1", "topologies:   5000", "supervisors:  4000", "slots used:   5000/16000"} {
		if !strings.Contains(got, line) {
			t.Errorf("no %q in:\n%s", line, got)
		}
	}
	if strings.Contains(got, "SUPERVISORS") || strings.Contains(got, "TOPOLOGIES") {
		t.Errorf("--summary lists supervisors or topologies:\n%s", got)
	}
	req := f.Requests("GetClusterInfo")[0].(*nimbusv1.GetClusterInfoRequest)
	if req.GetOmitNimbuses() || !req.GetOmitSupervisors() || !req.GetOmitTopologies() {
		t.Errorf("cluster --summary asked for %v", req)
	}
}
