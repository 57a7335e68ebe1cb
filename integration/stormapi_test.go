package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/jsonshape"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The Storm UI REST API (/api/v1) that every nimbus serves. One
// cluster of three nimbuses and a supervisor runs the example topology;
// every request goes to a follower, which answers reads from its own
// caches and forwards actions to the leader. The answers keep the shape
// of Storm's (stormapi/testdata/storm, compared with internal/testkit/jsonshape),
// the values Datadog's storm check and storm_exporter parse are numbers,
// hostile requests are refused with a JSON error and change nothing, and
// the four actions work.
func TestStormAPI(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr())
	// nimbus.seeds names the three, as a real deployment's would: a seed
	// that is not registered is listed as Offline, as Storm does.
	var ps []*testcluster.Process
	var seeds []string
	ports := testcluster.FreePorts(t, 3)
	for _, p := range ports {
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", p))
	}
	for _, p := range ports {
		n, err := c.StartNimbus(testcluster.WithPort(p),
			testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"), testcluster.WithEnv("STORM_NIMBUS_SEEDS="+strings.Join(seeds, ",")))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, n)
	}
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	sup := c.StartSupervisors(t, 1)[0]
	cl := newClient(t, c, ps...)
	follower := testcluster.Without(ps, leader)[0]
	api := newStormAPI(t, c, follower)

	const name = "stormapi"
	id := submitKinds(t, cl, name)
	var workerPort int32
	testcluster.WaitFor(t, 60*time.Second, "the topology's worker running", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), name)
		if err != nil {
			return err
		}
		w := info.GetWorkers()
		if len(w) != 1 || w[0].GetState() != "running" {
			return fmt.Errorf("workers %v", w)
		}
		workerPort = w[0].GetPort()
		return nil
	})
	testcluster.WaitFor(t, 20*time.Second, "the follower's REST API showing the running worker", func() error {
		var top struct {
			Status       string           `json:"status"`
			WorkersTotal int              `json:"workersTotal"`
			Workers      []map[string]any `json:"workers"`
		}
		if err := api.get(t, "/api/v1/topology/"+id, &top); err != nil {
			return err
		}
		if top.Status != "ACTIVE" || top.WorkersTotal != 1 || len(top.Workers) != 1 {
			return fmt.Errorf("status %q, workersTotal %d, workers %v", top.Status, top.WorkersTotal, top.Workers)
		}
		return nil
	})

	t.Run("Shapes", func(t *testing.T) {
		cs := api.shape(t, "/api/v1/cluster/summary", "cluster-summary.json")
		if v, _ := cs["stormVersion"].(string); !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(v) {
			t.Errorf("cluster/summary: stormVersion %q is not X.Y.Z", cs["stormVersion"])
		}
		if _, ok := cs["version"]; ok {
			t.Errorf("cluster/summary: a top-level version key (Datadog would read it instead of stormVersion): %v", cs["version"])
		}
		if cs["supervisors"] != 1.0 || cs["topologies"] != 1.0 || cs["slotsTotal"] != 2.0 || cs["slotsUsed"] != 1.0 || cs["slotsFree"] != 1.0 {
			t.Errorf("cluster/summary: supervisors %v topologies %v slots %v/%v/%v, want 1 1 2/1/1",
				cs["supervisors"], cs["topologies"], cs["slotsTotal"], cs["slotsUsed"], cs["slotsFree"])
		}
		if v, ok := cs["leaderlessSeconds"]; !ok || v != 0.0 {
			t.Errorf("cluster/summary: leaderlessSeconds %v (present %v), want 0 with a leader", v, ok)
		}
		if v, ok := cs["leadershipBlockedBy"]; !ok || !isEmpty(v) {
			t.Errorf("cluster/summary: leadershipBlockedBy %v (present %v), want empty with a leader", v, ok)
		}
		if _, ok := cs["cacheAgeMs"]; !ok {
			t.Errorf("cluster/summary: no cacheAgeMs")
		}
		api.numeric(t, "/api/v1/cluster/summary", "executorsTotal", "slotsFree", "slotsTotal", "slotsUsed", "supervisors",
			"tasksTotal", "topologies", "availCpu", "availMem", "cpuAssignedPercentUtil", "memAssignedPercentUtil", "totalCpu", "totalMem")

		ns := api.shape(t, "/api/v1/nimbus/summary", "nimbus-summary.json")
		var leaders, followers []string
		nimbuses, _ := ns["nimbuses"].([]any)
		for _, n := range nimbuses {
			m, _ := n.(map[string]any)
			addr := fmt.Sprintf("%v:%v", m["host"], m["port"])
			switch m["status"] {
			case "Leader":
				leaders = append(leaders, addr)
			case "Not a Leader":
				followers = append(followers, addr)
			default:
				t.Errorf("nimbus/summary: %s has status %v", addr, m["status"])
			}
		}
		if len(nimbuses) != 3 || !slices.Equal(leaders, []string{leader.Addr()}) || len(followers) != 2 {
			t.Errorf("nimbus/summary: %d nimbuses, leaders %v, followers %v; want 3, [%s], 2", len(nimbuses), leaders, followers, leader.Addr())
		}
		api.numeric(t, "/api/v1/nimbus/summary", "nimbuses[].nimbusUpTimeSeconds", "nimbuses[].port")

		ss := api.shape(t, "/api/v1/supervisor/summary", "supervisor-summary.json")
		if sups, _ := ss["supervisors"].([]any); len(sups) != 1 || sups[0].(map[string]any)["id"] != sup.ID() {
			t.Errorf("supervisor/summary: supervisors %v, want one, %s", ss["supervisors"], sup.ID())
		}
		api.numeric(t, "/api/v1/supervisor/summary", "supervisors[].slotsTotal", "supervisors[].slotsUsed",
			"supervisors[].uptimeSeconds", "supervisors[].totalCpu", "supervisors[].totalMem", "supervisors[].usedCpu", "supervisors[].usedMem")

		for _, q := range []string{"id=" + sup.ID(), "host=127.0.0.1"} {
			path := "/api/v1/supervisor?" + q
			s := api.shape(t, path, "supervisor.json")
			sups, _ := s["supervisors"].([]any)
			workers, _ := s["workers"].([]any)
			if len(sups) != 1 || len(workers) != 1 {
				t.Errorf("%s: %d supervisors and %d workers, want 1 and 1", path, len(sups), len(workers))
				continue
			}
			w := workers[0].(map[string]any)
			if w["topologyId"] != id || w["topologyName"] != name || w["port"] != float64(workerPort) || w["supervisorId"] != sup.ID() {
				t.Errorf("%s: worker %v, want %s (%s) on port %d of %s", path, w, id, name, workerPort, sup.ID())
			}
		}
		if s := api.shape(t, "/api/v1/supervisor?id=no-such-supervisor", "supervisor.json"); !isEmpty(s["supervisors"]) || !isEmpty(s["workers"]) {
			t.Errorf("supervisor?id=no-such-supervisor: %v, want empty arrays as Storm", s)
		}

		ts := api.shape(t, "/api/v1/topology/summary", "topology-summary.json")
		if tops, _ := ts["topologies"].([]any); len(tops) != 1 || tops[0].(map[string]any)["id"] != id || tops[0].(map[string]any)["status"] != "ACTIVE" {
			t.Errorf("topology/summary: %v, want %s ACTIVE", ts["topologies"], id)
		}
		api.numeric(t, "/api/v1/topology/summary", prefixed("topologies[].", "uptimeSeconds", "tasksTotal", "workersTotal",
			"executorsTotal", "replicationCount", "requestedMemOnHeap", "requestedMemOffHeap", "requestedTotalMem", "requestedCpu",
			"assignedMemOnHeap", "assignedMemOffHeap", "assignedTotalMem", "assignedCpu")...)

		for _, tc := range []struct{ query, window string }{{"", ":all-time"}, {"?window=60", "60"}} {
			path := "/api/v1/topology/" + id + tc.query
			top := api.shape(t, path, "topology.json")
			if top["status"] != "ACTIVE" || top["window"] != tc.window || top["id"] != id || top["name"] != name {
				t.Errorf("%s: status %v window %v id %v name %v, want ACTIVE %s %s %s", path, top["status"], top["window"], top["id"], top["name"], tc.window, id, name)
			}
			var windows []any
			stats, _ := top["topologyStats"].([]any)
			for _, s := range stats {
				windows = append(windows, s.(map[string]any)["window"])
			}
			if !slices.Equal(windows, []any{"600", "10800", "86400", ":all-time"}) {
				t.Errorf("%s: topologyStats windows %v, want Storm's four in its order", path, windows)
			}
			if got := componentIDs(top["spouts"], "spoutId"); !slices.Equal(got, []string{"sentence"}) {
				t.Errorf("%s: spouts %v, want [sentence]", path, got)
			}
			if got := componentIDs(top["bolts"], "boltId"); !slices.Equal(got, []string{"count", "split"}) {
				t.Errorf("%s: bolts %v, want [count split]", path, got)
			}
			for _, k := range []string{"leaderlessSeconds", "cacheAgeMs"} {
				if _, ok := top[k]; !ok {
					t.Errorf("%s: no %s", path, k)
				}
			}
			// Tuple counts are null while no worker reported ("no data").
			api.numericOrNull(t, path, append(append(
				prefixed("topologyStats[].", "transferred", "emitted", "completeLatency", "acked", "failed"),
				prefixed("spouts[].", "emitted", "completeLatency", "transferred", "acked", "failed")...),
				prefixed("bolts[].", "processLatency", "capacity", "executeLatency", "acked", "failed", "emitted",
					"executed", "transferred")...)...)
			api.numeric(t, path, append(append(
				prefixed("spouts[].", "executors", "tasks", "requestedMemOffHeap", "requestedMemOnHeap", "requestedCpu"),
				prefixed("bolts[].", "executors", "tasks", "requestedMemOffHeap", "requestedMemOnHeap", "requestedCpu")...),
				"assignedCpu", "assignedMemOffHeap", "assignedMemOnHeap", "assignedTotalMem", "executorsTotal", "msgTimeout",
				"replicationCount", "requestedCpu", "requestedMemOffHeap", "requestedMemOnHeap", "samplingPct", "tasksTotal",
				"uptimeSeconds", "workersTotal", "workers[].port", "workers[].assignedCpu", "workers[].assignedMemOffHeap",
				"workers[].assignedMemOnHeap", "workers[].executorsTotal", "workers[].uptimeSeconds")...)
		}

		tw := api.shape(t, "/api/v1/topology-workers/"+id, "topology-workers.json")
		if hp, _ := tw["hostPortList"].([]any); len(hp) != 1 || hp[0].(map[string]any)["host"] != "127.0.0.1" || hp[0].(map[string]any)["port"] != float64(workerPort) {
			t.Errorf("topology-workers: hostPortList %v, want 127.0.0.1:%d", tw["hostPortList"], workerPort)
		}

		comp := api.shape(t, "/api/v1/topology/"+id+"/component/sentence", "component.json")
		if comp["componentType"] != "spout" || comp["id"] != "sentence" || comp["topologyId"] != id || comp["topologyStatus"] != "ACTIVE" {
			t.Errorf("component/sentence: type %v id %v topologyId %v status %v", comp["componentType"], comp["id"], comp["topologyId"], comp["topologyStatus"])
		}

		m := api.shape(t, "/api/v1/topology/"+id+"/metrics", "topology-metrics.json")
		if got := componentIDs(m["spouts"], "id"); !slices.Equal(got, []string{"sentence"}) {
			t.Errorf("metrics: spouts %v, want [sentence]", got)
		}

		a := api.do(t, "GET", "/api/v1/cluster/configuration", "")
		var conf map[string]any
		if err := a.json(&conf); err != nil || a.code != http.StatusOK || !strings.Contains(a.ctype, "application/json") || len(conf) == 0 {
			t.Errorf("cluster/configuration: %v (%v), want 200 and a non-empty JSON object", a, err)
		}
		for _, p := range jsonshape.ForbidKeys(a.body, "error") {
			t.Errorf("cluster/configuration: %s", p)
		}
	})

	t.Run("Hostile", func(t *testing.T) {
		long := strings.Repeat("x", 10000)
		for _, tc := range []struct {
			name, method, path, body string
			header                   []string
			want                     []int
		}{
			{"unknown topology", "GET", "/api/v1/topology/nosuch-1-1", "", nil, []int{404}},
			{"unknown topology, action", "POST", "/api/v1/topology/nosuch-1-1/deactivate", "", nil, []int{404}},
			{"dot-dot id", "GET", "/api/v1/topology/..%2F..%2Fetc%2Fpasswd", "", nil, []int{400, 404}},
			{"dot-dot id, action", "POST", "/api/v1/topology/..%2F" + id + "/kill/0", "", nil, []int{400, 404}},
			{"escaped slash", "GET", "/api/v1/topology/" + id + "%2Fmetrics", "", nil, []int{400, 404}},
			{"very long id", "GET", "/api/v1/topology/" + long, "", nil, []int{400, 404, 414}},
			{"very long id, action", "POST", "/api/v1/topology/" + long + "/activate", "", nil, []int{400, 404, 414}},
			{"wait not a number", "POST", "/api/v1/topology/" + id + "/rebalance/abc", "", nil, []int{400}},
			{"negative wait", "POST", "/api/v1/topology/" + id + "/rebalance/-1", "", nil, []int{400}},
			{"wait beyond int32", "POST", "/api/v1/topology/" + id + "/kill/99999999999", "", nil, []int{400}},
			{"body not JSON", "POST", "/api/v1/topology/" + id + "/rebalance/0", "numWorkers=1", []string{"Content-Type", "application/json"}, []int{400}},
			{"unknown component", "POST", "/api/v1/topology/" + id + "/rebalance/0", `{"rebalanceOptions":{"executors":{"nosuch":2}}}`, []string{"Content-Type", "application/json"}, []int{400}},
			{"zero workers", "POST", "/api/v1/topology/" + id + "/rebalance/0", `{"rebalanceOptions":{"numWorkers":0}}`, []string{"Content-Type", "application/json"}, []int{400}},
			{"unknown component page", "GET", "/api/v1/topology/" + id + "/component/nosuch", "", nil, []int{404}},
			{"garbage window", "GET", "/api/v1/topology/" + id + "?window=garbage", "", nil, []int{400}},
			{"supervisor without id or host", "GET", "/api/v1/supervisor", "", nil, []int{400}},
			{"GET on an action", "GET", "/api/v1/topology/" + id + "/deactivate", "", nil, []int{405}},
			{"JSONP", "GET", "/api/v1/cluster/summary?callback=x", "", nil, []int{400}},
			{"cross-origin POST", "POST", "/api/v1/topology/" + id + "/deactivate", "", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, []int{403}},
			{"cross-origin kill", "POST", "/api/v1/topology/" + id + "/kill/0", "", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, []int{403}},
		} {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				a := api.do(t, tc.method, tc.path, tc.body, tc.header...)
				if !slices.Contains(tc.want, a.code) {
					t.Errorf("%s %s: %s, want %v", tc.method, short(tc.path), a, tc.want)
				}
				refusal(t, tc.method+" "+short(tc.path), a)
				unchanged(t, cl, name)
			})
		}
	})

	t.Run("Actions", func(t *testing.T) {
		action := func(op, path, body string) {
			t.Helper()
			a := api.do(t, "POST", "/api/v1/topology/"+id+"/"+path, body, "Content-Type", "application/json")
			var got map[string]any
			if err := a.json(&got); err != nil || a.code != http.StatusOK {
				t.Fatalf("POST %s: %s", path, a)
			}
			want := map[string]any{"topologyOperation": op, "topologyId": id, "status": "success"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("POST %s: %s = %v, want %v", path, k, got[k], v)
				}
			}
			checkShape(t, "POST "+path, "action.json", a.body)
		}
		waitStatus := func(want clusterv1.TopologyStatus, rest string) {
			t.Helper()
			testcluster.WaitFor(t, 20*time.Second, "topology "+rest, func() error {
				info, err := cl.GetTopologyInfo(t.Context(), name)
				if err != nil {
					return err
				}
				if got := info.GetTopology().GetStatus(); got != want {
					return fmt.Errorf("gRPC: %v", got)
				}
				var top struct {
					Status string `json:"status"`
				}
				if err := api.get(t, "/api/v1/topology/"+id, &top); err != nil {
					return err
				}
				if top.Status != rest {
					return fmt.Errorf("REST: %q", top.Status)
				}
				return nil
			})
		}

		action("deactivate", "deactivate", "")
		waitStatus(clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE, "INACTIVE")
		action("activate", "activate", "")
		waitStatus(clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, "ACTIVE")
		action("rebalance", "rebalance/0", `{"rebalanceOptions":{"numWorkers":1}}`)
		waitStatus(clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, "ACTIVE")
		action("kill", "kill/0", "")
		testcluster.WaitFor(t, 30*time.Second, "the killed topology gone", func() error {
			if _, err := cl.GetTopologyInfo(t.Context(), name); status.Code(err) != codes.NotFound {
				return fmt.Errorf("gRPC: %v", err)
			}
			if a := api.do(t, "GET", "/api/v1/topology/"+id, ""); a.code != http.StatusNotFound {
				return fmt.Errorf("REST: %s", a)
			}
			var ts struct {
				Topologies []any `json:"topologies"`
			}
			if err := api.get(t, "/api/v1/topology/summary", &ts); err != nil || len(ts.Topologies) != 0 {
				return fmt.Errorf("topology/summary: %v %v", ts.Topologies, err)
			}
			return nil
		})
	})
}

// No nimbus may lead (the only one holding a topology's code is gone):
// reads still answer, saying how long there has been no leader and which
// topology blocks leadership, and an action answers 503 saying there is
// no leader.
func TestStormAPILeaderless(t *testing.T) {
	c, _, b, id := orphanTopology(t, "orphan", randomBytes(t, 1000))
	api := newStormAPI(t, c, b)

	testcluster.WaitFor(t, 30*time.Second, "b's cluster/summary: leaderless for a while, blocked by the topology", func() error {
		var cs struct {
			LeaderlessSeconds   *float64 `json:"leaderlessSeconds"`
			LeadershipBlockedBy []string `json:"leadershipBlockedBy"`
		}
		if err := api.get(t, "/api/v1/cluster/summary", &cs); err != nil {
			return err
		}
		if cs.LeaderlessSeconds == nil {
			return errors.New("no leaderlessSeconds")
		}
		if *cs.LeaderlessSeconds <= 0 || len(cs.LeadershipBlockedBy) != 1 || !strings.Contains(cs.LeadershipBlockedBy[0], id) {
			return fmt.Errorf("leaderlessSeconds %v, leadershipBlockedBy %q; want > 0 and one entry naming %s", *cs.LeaderlessSeconds, cs.LeadershipBlockedBy, id)
		}
		return nil
	})
	api.shape(t, "/api/v1/cluster/summary", "cluster-summary.json")
	ns := api.shape(t, "/api/v1/nimbus/summary", "nimbus-summary.json")
	nimbuses, _ := ns["nimbuses"].([]any)
	if len(nimbuses) == 0 {
		t.Errorf("nimbus/summary: no nimbuses (Datadog needs one)")
	}
	for _, n := range nimbuses {
		if m, _ := n.(map[string]any); m["status"] == "Leader" {
			t.Errorf("nimbus/summary: %v is listed as Leader", m)
		}
	}
	api.shape(t, "/api/v1/topology/summary", "topology-summary.json")

	ans := api.do(t, "POST", "/api/v1/topology/"+id+"/deactivate", "")
	if ans.code != http.StatusServiceUnavailable {
		t.Errorf("POST deactivate without a leader: %s, want 503", ans)
	}
	refusal(t, "POST deactivate without a leader", ans)
	var e struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if err := ans.json(&e); err != nil || !strings.Contains(strings.ToLower(e.ErrorMessage), "no leader") {
		t.Errorf("POST deactivate without a leader: errorMessage %q (%v), want it to say there is no leader", e.ErrorMessage, err)
	}
	// The same figure for Prometheus, and the refusal counted.
	page, err := b.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := metricValue(page, "nimbus_leaderless_seconds"); !ok || v <= 0 {
		t.Errorf("nimbus_leaderless_seconds = %v (found %v), want > 0", v, ok)
	}
	if v, ok := metricValue(page, `nimbus_http_requests_total{code="503",route="/api/v1/topology/{id}/deactivate"}`); !ok || v != 1 {
		t.Errorf("the 503 counted %v times (found %v), want 1", v, ok)
	}
}

// metricValue finds the sample named series (with its labels, as the
// exposition format writes them) in a metrics page.
func metricValue(page, series string) (float64, bool) {
	for line := range strings.Lines(page) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// submitKinds submits the example worker program as a topology of one
// spout and two bolts, with one worker, and returns its id.
func submitKinds(t *testing.T, cl *client.Client, name string) string {
	t.Helper()
	data, err := os.ReadFile(testcluster.Bin(t).Path("wordcount"))
	if err != nil {
		t.Fatal(err)
	}
	spec := &nimbusv1.TopologySpec{
		Name: name, NumWorkers: 1, Owner: "tester",
		Components: []*nimbusv1.ComponentSpec{
			{Id: "sentence", Parallelism: 1, Kind: nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT},
			{Id: "split", Parallelism: 2, Kind: nimbusv1.ComponentKind_COMPONENT_KIND_BOLT},
			{Id: "count", Parallelism: 3, Kind: nimbusv1.ComponentKind_COMPONENT_KIND_BOLT},
		},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, strings.NewReader(string(data)), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetTopologyId()
}

// unchanged checks that a refused request left the topology as it was:
// active, with its one worker.
func unchanged(t *testing.T, cl *client.Client, name string) {
	t.Helper()
	info, err := cl.GetTopologyInfo(t.Context(), name)
	if err != nil {
		t.Fatalf("the topology after a refusal: %v", err)
	}
	if top := info.GetTopology(); top.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE || top.GetNumWorkers() != 1 {
		t.Fatalf("the topology after a refusal: %v with %d workers, want active with 1", top.GetStatus(), top.GetNumWorkers())
	}
}

// stormAPI is a client of one nimbus's REST API.
type stormAPI struct {
	hc   *http.Client
	base string // Process.UIURL
}

// newStormAPI is a client of p's REST API as c's admin. It fails the test
// if p's ready line names no UI address.
func newStormAPI(t *testing.T, c *testcluster.Cluster, p *testcluster.Process) stormAPI {
	t.Helper()
	u := p.UIURL()
	if strings.HasSuffix(u, "://") {
		t.Fatalf("%s announced no ui address in its ready line", p.Name)
	}
	return stormAPI{hc: c.UIClient(t), base: u}
}

// apiAnswer is one HTTP answer, read whole.
type apiAnswer struct {
	code  int
	ctype string
	body  []byte
}

func (a apiAnswer) String() string {
	body := string(a.body)
	if len(body) > 400 {
		body = body[:400] + "..."
	}
	return fmt.Sprintf("%d (%s) %s", a.code, a.ctype, body)
}

func (a apiAnswer) json(v any) error { return json.Unmarshal(a.body, v) }

// do sends one request (header: name, value pairs), without following
// redirects, and fails the test if no answer comes within 10 s.
func (s stormAPI) do(t *testing.T, method, path, body string, header ...string) apiAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	hc := *s.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, short(path), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, short(path), err)
	}
	return apiAnswer{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
}

// get GETs path and decodes a 200 answer into v, for polling.
func (s stormAPI) get(t *testing.T, path string, v any) error {
	a := s.do(t, "GET", path, "")
	if a.code != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, a)
	}
	return a.json(v)
}

// shape GETs path, checks that the answer is a 200 of JSON with fixture's
// shape and no top-level error key, and returns it decoded (nil if it is
// not a JSON object). Problems fail the test but do not stop it.
func (s stormAPI) shape(t *testing.T, path, fixture string) map[string]any {
	t.Helper()
	a := s.do(t, "GET", path, "")
	if a.code != http.StatusOK || !strings.Contains(a.ctype, "application/json") {
		t.Errorf("GET %s: %s, want 200 with Content-Type application/json", path, a)
	}
	checkShape(t, "GET "+path, fixture, a.body)
	for _, p := range jsonshape.ForbidKeys(a.body, "error") {
		t.Errorf("GET %s: %s", path, p)
	}
	var m map[string]any
	_ = a.json(&m)
	return m
}

// numeric GETs path and checks that the values at paths are numbers or
// numeric strings (jsonshape.Numeric).
func (s stormAPI) numeric(t *testing.T, path string, paths ...string) {
	t.Helper()
	a := s.do(t, "GET", path, "")
	for _, p := range jsonshape.Numeric(a.body, paths...) {
		t.Errorf("GET %s: %s", path, p)
	}
}

// numericOrNull is numeric accepting null (jsonshape.NumericOrNull).
func (s stormAPI) numericOrNull(t *testing.T, path string, paths ...string) {
	t.Helper()
	a := s.do(t, "GET", path, "")
	for _, p := range jsonshape.NumericOrNull(a.body, paths...) {
		t.Errorf("GET %s: %s", path, p)
	}
}

// refusal checks that a is a JSON error of error.json's shape.
func refusal(t *testing.T, what string, a apiAnswer) {
	t.Helper()
	if !strings.Contains(a.ctype, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", what, a.ctype)
	}
	checkShape(t, what, "error.json", a.body)
	var e struct{ Error, ErrorMessage string }
	if err := a.json(&e); err == nil && (e.Error == "" || e.ErrorMessage == "") {
		t.Errorf("%s: empty error or errorMessage in %s", what, a)
	}
}

// checkShape compares body with the fixture stormapi/testdata/storm/name.
func checkShape(t *testing.T, what, name string, body []byte) {
	t.Helper()
	fixture, err := os.ReadFile(filepath.Join("..", "stormapi", "testdata", "storm", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range jsonshape.Check(fixture, body) {
		t.Errorf("%s (against %s): %s", what, name, p)
	}
}

func prefixed(prefix string, keys ...string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}

// componentIDs are the values of key in the objects of list, sorted.
func componentIDs(list any, key string) []string {
	var ids []string
	l, _ := list.([]any)
	for _, c := range l {
		if m, ok := c.(map[string]any); ok {
			ids = append(ids, fmt.Sprint(m[key]))
		}
	}
	slices.Sort(ids)
	return ids
}

// isEmpty says whether v is null, an empty array or an empty string.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

// short shortens a path for messages.
func short(path string) string {
	if len(path) > 120 {
		return path[:120] + "..."
	}
	return path
}
