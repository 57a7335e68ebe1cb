package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// simCountingWorker is a supervisor that one test writes by hand: its
// heartbeat node carries one worker of a topology with the counts the test
// sets, as a real supervisor carries what its worker reported.
type simCountingWorker struct {
	conn     *zk.Conn
	path     string
	topology string
	started  int64
}

func (s *simCountingWorker) beat(t *testing.T, spoutEmitted, boltExecuted uint64) {
	t.Helper()
	now := time.Now().UnixMilli()
	info := &clusterv1.SupervisorInfo{
		SupervisorId: "sim-metrics", Host: "127.0.0.1", SlotPorts: []int32{6700}, StartTimeUnixMs: now, Version: "sim",
		LastHeartbeatUnixMs: now,
		Workers: []*clusterv1.WorkerState{{
			TopologyId: s.topology, Port: 6700, State: "running", Pid: 1,
			Metrics: &clusterv1.WorkerMetrics{TakenUnixMs: now, StartedUnixMs: s.started, Streams: []*clusterv1.StreamStats{
				{Component: "spout", Stream: "default", Kind: "spout", Executors: 2, Emitted: spoutEmitted, Transferred: spoutEmitted,
					Acked: spoutEmitted, CompleteLatencyUs: spoutEmitted * 4000},
				{Component: "bolt", Stream: "default", Kind: "bolt", Executors: 3, Executed: boltExecuted, Acked: boltExecuted,
					ExecuteLatencyUs: boltExecuted * 1500, ProcessLatencyUs: boltExecuted * 2000},
			}},
		}},
	}
	data := cluster.Encode(info)
	if _, err := s.conn.Set(s.path, data, -1); err == zk.ErrNoNode {
		if _, err = s.conn.Create(s.path, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// allTimeCounts is what cl answers for the topology's counts for all
// time: the spout's emitted and the bolt's executed; -1 without stats.
func allTimeCounts(t *testing.T, cl *client.Client, name string) (int64, int64, error) {
	info, err := cl.GetTopologyInfo(t.Context(), name, client.WithStatsWindow("600"))
	if err != nil {
		return 0, 0, err
	}
	if info.GetStats() == nil {
		return -1, -1, nil
	}
	var spout, bolt int64
	for _, c := range info.GetStats().GetComponents() {
		for _, w := range c.GetWindows() {
			if w.GetWindow() != ":all-time" {
				continue
			}
			switch c.GetComponent() {
			case "spout":
				spout = int64(w.GetCounts().GetEmitted())
			case "bolt":
				bolt = int64(w.GetCounts().GetExecuted())
			}
		}
	}
	return spout, bolt, nil
}

// Every nimbus aggregates the workers' counts from the heartbeats it
// reads: the leader and the follower answer the same counts in Storm's
// windows, through gRPC, the REST API and Prometheus; a worker restart
// counts from zero again and keeps all time; the follower that becomes
// leader keeps the all-time counts.
func TestStatsWindowsOnEveryNimbusAndAcrossALeaderChange(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2)
	_, leader := c.WaitLeader(t, ps, 20*time.Second)
	follower := ps[0]
	if follower == leader {
		follower = ps[1]
	}
	cl := newClient(t, c, ps...)
	spec := testSpec("counted")
	spec.Components[0].Kind = nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT
	spec.Components[1].Kind = nimbusv1.ComponentKind_COMPONENT_KIND_BOLT
	data := randomBytes(t, 100)
	resp, err := cl.SubmitTopology(t.Context(), spec, strings.NewReader(string(data)), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTopologyId()
	leaderCl, followerCl := newClient(t, c, leader), newClient(t, c, follower)

	// No worker reported: no data, not zeros (once the follower has read
	// the submit: its cache may be a moment behind the leader's answer).
	testcluster.WaitFor(t, 10*time.Second, "the follower to know the topology", func() error {
		_, err := followerCl.GetTopologyInfo(t.Context(), "counted")
		return err
	})
	if s, _, err := allTimeCounts(t, followerCl, "counted"); err != nil || s != -1 {
		t.Fatalf("before any report: spout %d (%v), want no stats", s, err)
	}
	top := statsPage(t, leader.UIURL()+"/api/v1/topology/"+id+"?window=600")
	if top["statsReported"] != false || top["topologyStats"].([]any)[0].(map[string]any)["emitted"] != nil {
		t.Fatalf("REST before any report: statsReported %v topologyStats %v, want false and null", top["statsReported"], top["topologyStats"])
	}

	sim := &simCountingWorker{conn: testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr()), path: cluster.Paths{Root: c.Root}.Supervisor("sim-metrics"),
		topology: id, started: time.Now().Add(-30 * time.Second).UnixMilli()}
	sim.beat(t, 100, 50)
	sim.beat(t, 300, 150)
	waitCounts := func(what string, cls map[string]*client.Client, spout, bolt int64) {
		t.Helper()
		testcluster.WaitFor(t, 30*time.Second, what, func() error {
			for name, cl := range cls {
				s, b, err := allTimeCounts(t, cl, "counted")
				if err != nil || s != spout || b != bolt {
					return fmt.Errorf("%s: spout emitted %d, bolt executed %d (%v); want %d, %d", name, s, b, err, spout, bolt)
				}
			}
			return nil
		})
	}
	waitCounts("both nimbuses counting the worker's reports", map[string]*client.Client{"leader": leaderCl, "follower": followerCl}, 300, 150)

	// Storm's fields on the follower's REST API.
	top = statsPage(t, follower.UIURL()+"/api/v1/topology/"+id+"?window=600")
	stats := top["topologyStats"].([]any)
	if top["statsReported"] != true || stats[0].(map[string]any)["emitted"] != 300.0 || stats[3].(map[string]any)["acked"] != 300.0 ||
		stats[0].(map[string]any)["completeLatency"] != "4.000" {
		t.Errorf("topologyStats %v, want 300 emitted and acked, complete latency 4.000", stats)
	}
	spout := top["spouts"].([]any)[0].(map[string]any)
	bolt := top["bolts"].([]any)[0].(map[string]any)
	if spout["emitted"] != 300.0 || bolt["executed"] != 150.0 || bolt["executeLatency"] != "1.500" || bolt["processLatency"] != "2.000" {
		t.Errorf("spout %v bolt %v, want 300 emitted, 150 executed, 1.500 and 2.000 ms", spout, bolt)
	}
	if capacity, ok := bolt["capacity"].(string); !ok || capacity == "0.000" {
		t.Errorf("bolt capacity %v, want a non-zero numeric string", bolt["capacity"])
	}
	m := statsPage(t, follower.UIURL()+"/api/v1/topology/"+id+"/metrics?window=600")
	executed := m["bolts"].([]any)[0].(map[string]any)["executed"].([]any)
	if len(executed) != 1 || executed[0].(map[string]any)["stream_id"] != "default" || executed[0].(map[string]any)["value"] != 150.0 {
		t.Errorf("metrics: bolt executed %v, want default 150", executed)
	}
	comp := statsPage(t, follower.UIURL()+"/api/v1/topology/"+id+"/component/bolt?window=600")
	if bs := comp["boltStats"].([]any); bs[3].(map[string]any)["executed"] != 150.0 {
		t.Errorf("component bolt: boltStats %v, want 150 executed all time", bs)
	}
	if in := comp["inputStats"].([]any); len(in) != 1 || in[0].(map[string]any)["executed"] != 150.0 {
		t.Errorf("component bolt: inputStats %v, want default 150", in)
	}
	if code, body := statsGet(t, follower.UIURL()+"/api/v1/topology/"+id+"?window=42x"); code != http.StatusBadRequest || !strings.Contains(string(body), "window") {
		t.Errorf("window=42x: %d %s, want 400 naming window", code, body)
	}
	if _, err := followerCl.GetTopologyInfo(t.Context(), "counted", client.WithStatsWindow("60")); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("gRPC window 60: %v, want an error naming window", err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the follower's Prometheus series", func() error {
		text, err := follower.Metrics()
		if err != nil {
			return err
		}
		for _, want := range []string{`nimbus_topology_tuples_total{component="spout",kind="emitted",topology="counted"} 300`,
			`nimbus_topology_tuples_total{component="bolt",kind="executed",topology="counted"} 150`, `nimbus_topology_capacity{component="bolt",topology="counted"}`} {
			if !strings.Contains(text, want) {
				return fmt.Errorf("no %s", want)
			}
		}
		return nil
	})

	// The worker restarts: its counters begin again, all time keeps what
	// the first run counted.
	sim.started = time.Now().UnixMilli()
	sim.beat(t, 20, 10)
	waitCounts("a restarted worker's counts added", map[string]*client.Client{"leader": leaderCl, "follower": followerCl}, 320, 160)

	// The leader goes: the follower leads with the all-time counts it had.
	if err := leader.Stop(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, []*testcluster.Process{follower}, 30*time.Second)
	waitCounts("the new leader keeping all time", map[string]*client.Client{"new leader": followerCl}, 320, 160)
	sim.beat(t, 70, 30)
	waitCounts("the new leader counting on", map[string]*client.Client{"new leader": followerCl}, 370, 180)
}

// statsGet answers GET url's code and body.
func statsGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// statsPage is GET url's JSON object, which must come with 200.
func statsPage(t *testing.T, url string) map[string]any {
	t.Helper()
	code, body := statsGet(t, url)
	var out map[string]any
	if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s: %d %s (%v)", url, code, body, err)
	}
	return out
}

// The example's real workers: the counts the nimbus answers through the
// REST API match what the worker reported in its supervisor's heartbeat
// (no fewer than a heartbeat read before, no more than the one after),
// every window has them, /metrics has them per stream, and stormctl shows
// them.
func TestStatsFromTheWordcountExample(t *testing.T) {
	c, ps, sup, conn := metricsCluster(t)
	cl := newClient(t, c, ps...)
	const name = "counted-wc"
	id := submitExample(t, cl, name, 1)
	reported := func() (uint64, error) {
		_, m, err := heartbeatRows(t, conn, sup, id)
		if err != nil {
			return 0, err
		}
		var n uint64
		for _, s := range m.GetStreams() {
			if s.GetComponent() == "sentence" {
				n += s.GetEmitted()
			}
		}
		return n, nil
	}
	var before uint64
	testcluster.WaitFor(t, 60*time.Second, "the worker reporting emitted sentences", func() error {
		n, err := reported()
		if err == nil && n == 0 {
			err = fmt.Errorf("nothing emitted yet")
		}
		before = n
		return err
	})
	// submitExample names no kinds: the page lists every component as a bolt.
	spoutEmitted := func(page map[string]any) float64 {
		for _, s := range page["bolts"].([]any) {
			if sp := s.(map[string]any); sp["boltId"] == "sentence" {
				n, _ := sp["emitted"].(float64)
				return n
			}
		}
		return -1
	}
	testcluster.WaitFor(t, 30*time.Second, "the REST API's all-time count within the heartbeats' counts", func() error {
		got := spoutEmitted(statsPage(t, ps[0].UIURL()+"/api/v1/topology/"+id))
		after, err := reported()
		if err != nil {
			return err
		}
		if got < float64(before) || got > float64(after) {
			return fmt.Errorf("sentence emitted %v, want from %d (a heartbeat before) to %d (the heartbeat now)", got, before, after)
		}
		return nil
	})
	top := statsPage(t, ps[0].UIURL()+"/api/v1/topology/"+id+"?window=600")
	for _, w := range top["topologyStats"].([]any) {
		if n, _ := w.(map[string]any)["emitted"].(float64); n <= 0 {
			t.Errorf("topologyStats %v: want tuples emitted in every window", w)
		}
	}
	if n := spoutEmitted(top); n <= 0 {
		t.Errorf("window 600: sentence emitted %v, want some", n)
	}
	for _, b := range top["bolts"].([]any) {
		if b.(map[string]any)["boltId"] == "sentence" {
			continue
		}
		if n, _ := b.(map[string]any)["executed"].(float64); n <= 0 {
			t.Errorf("window 600: bolt %v executed nothing", b.(map[string]any)["boltId"])
		}
	}
	m := statsPage(t, ps[0].UIURL()+"/api/v1/topology/"+id+"/metrics?window=600")
	for _, b := range m["bolts"].([]any) {
		if e := b.(map[string]any)["emitted"].([]any); b.(map[string]any)["id"] == "sentence" && len(e) == 0 {
			t.Errorf("metrics: sentence's emitted has no stream")
		}
	}
	// A bolt's input metrics name the component its tuples came from.
	countAcked := map[string]float64{}
	for _, b := range m["bolts"].([]any) {
		if b.(map[string]any)["id"] != "count" {
			continue
		}
		for _, e := range b.(map[string]any)["acked"].([]any) {
			n, _ := e.(map[string]any)["value"].(float64)
			countAcked[fmt.Sprint(e.(map[string]any)["component_id"])] += n
		}
	}
	if len(countAcked) != 1 || countAcked["split"] <= 0 {
		t.Errorf("metrics: count's acked by component_id %v, want tuples from split only", countAcked)
	}
	page := statsPage(t, ps[0].UIURL()+"/api/v1/topology/"+id+"/component/count?window=600")
	var inputs []string
	for _, in := range page["inputStats"].([]any) {
		inputs = append(inputs, fmt.Sprint(in.(map[string]any)["component"]))
	}
	if len(inputs) != 1 || inputs[0] != "split" {
		t.Errorf("component count's inputStats from %q, want from split", inputs)
	}
	out, errOut, code := stormctl(t, append(append(c.ClientFlags(), "--seeds", ps[0].Addr()), "topology", name, "--window", "600")...)
	if code != 0 || !strings.Contains(out, "COUNTS (window 600)") || strings.Contains(out, "no data") {
		t.Errorf("stormctl topology --window 600: exit %d %s\n%s", code, errOut, out)
	}
}
