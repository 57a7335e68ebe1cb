package cluster_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// zkPayload is one kind of node payload nimbus reads from ZooKeeper.
type zkPayload struct {
	path string
	new  func() proto.Message
	seed proto.Message
}

var fuzzPaths = cluster.Paths{Root: "/storm"}

const fuzzID = "wordcount-1-1400000000"

// zkPayloads lists every payload type stored in ZooKeeper, at a node
// where it lives (docs/ARCHITECTURE.md section 3).
var zkPayloads = []zkPayload{
	{fuzzPaths.Storm(fuzzID), func() proto.Message { return new(clusterv1.StormBase) }, &clusterv1.StormBase{
		Name: "wordcount", Owner: "Jürgen", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING,
		LaunchTimeUnixSecs: 1400000000, NumWorkers: 3, ComponentExecutors: map[string]int32{"split": 8, "count:v2": 12},
		CodeMetaDigest: make([]byte, 32), Epoch: 7, PreviousStatus: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
		ActionDeadlineUnixMs: 1400000030000,
		PendingRebalance:     &clusterv1.RebalancePlan{NumWorkers: 4, ComponentExecutors: map[string]int32{"split": 4}},
	}},
	{fuzzPaths.Assignment(fuzzID), func() proto.Message { return new(clusterv1.Assignment) }, &clusterv1.Assignment{
		Executors: []*clusterv1.ExecutorAssignment{{
			Executor:          &clusterv1.Executor{ComponentId: "split", TaskStart: 1, TaskEnd: 4},
			Slot:              &clusterv1.Slot{SupervisorId: "sup-1", Port: 6700},
			StartTimeUnixSecs: 1400000001,
		}},
		SupervisorHosts: map[string]string{"sup-1": "host-1"}, CodeMetaDigest: make([]byte, 32), Epoch: 7,
	}},
	{fuzzPaths.Nimbus("nimbus-1:6627"), func() proto.Message { return new(clusterv1.NimbusInfo) }, &clusterv1.NimbusInfo{
		Host: "nimbus-1", Port: 6627, StartTimeUnixMs: 1400000000000, Version: "v1.2.3",
	}},
	{fuzzPaths.LeaderLock() + "/_c_0123-lock-0000000007", func() proto.Message { return new(clusterv1.NimbusInfo) }, &clusterv1.NimbusInfo{
		Host: "nimbus-2", Port: 6627,
	}},
	{fuzzPaths.Supervisor("sup-1"), func() proto.Message { return new(clusterv1.SupervisorInfo) }, &clusterv1.SupervisorInfo{
		SupervisorId: "sup-1", Host: "host-1", SlotPorts: []int32{6700, 6701}, UsedPorts: []int32{6700},
		Workers:         []*clusterv1.WorkerState{{TopologyId: fuzzID, Port: 6700, Pid: 4242, State: "running", Restarts: 1, LastError: "exit 1"}},
		StartTimeUnixMs: 1400000000000, Version: "v1.2.3", LastHeartbeatUnixMs: 1400000005000, TorrentPort: 6881,
	}},
	{fuzzPaths.Distribution(fuzzID), func() proto.Message { return new(clusterv1.CodeDistribution) }, &clusterv1.CodeDistribution{
		CodeMetaDigest: make([]byte, 32), Epoch: 7, CreatedUnixMs: 1400000000000,
	}},
	{fuzzPaths.Replica(fuzzID, "nimbus-1:6627"), func() proto.Message { return new(clusterv1.ReplicaInfo) }, &clusterv1.ReplicaInfo{
		Host: "nimbus-1", Port: 6627, CodeMetaDigest: make([]byte, 32),
	}},
}

// FuzzDecode feeds every ZooKeeper payload type any bytes: Decode never
// panics, an error names the node, and what decodes encodes and decodes
// back to itself. Run it for longer with:
// go test ./cluster -run '^$' -fuzz '^FuzzDecode$'
func FuzzDecode(f *testing.F) {
	for i, p := range zkPayloads {
		data := cluster.Encode(p.seed)
		f.Add(uint8(i), data)
		f.Add(uint8(i), data[:len(data)/2])             // truncated
		f.Add(uint8(i), []byte{})                       // an empty node
		f.Add(uint8(i), []byte{0x0a, 0x02, 0xff, 0xfe}) // field 1 as invalid UTF-8
		f.Add(uint8(i), []byte{0x08, 0x80})             // a truncated varint
		f.Add(uint8(i), []byte("nimbus-1:6627"))        // a payload of another era
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		p := zkPayloads[int(kind)%len(zkPayloads)]
		m := p.new()
		err := cluster.Decode(p.path, data, m)
		if err != nil {
			if !strings.Contains(err.Error(), p.path) {
				t.Fatalf("error %q does not name the node %s", err, p.path)
			}
			return
		}
		back := p.new()
		if err := cluster.Decode(p.path, cluster.Encode(m), back); err != nil || !proto.Equal(m, back) {
			t.Fatalf("%T does not survive Encode and Decode: %v\n%v\n%v", m, err, m, back)
		}
		// Decoding into a message that held another payload leaves nothing
		// of the old one.
		reused := p.new()
		if err := cluster.Decode(p.path, cluster.Encode(p.seed), reused); err != nil {
			t.Fatal(err)
		}
		if err := cluster.Decode(p.path, data, reused); err != nil || !proto.Equal(m, reused) {
			t.Fatalf("decoding into a used %T: %v\n%v\nwant %v", m, err, reused, m)
		}
	})
}

func TestLives(t *testing.T) {
	active := &clusterv1.StormBase{Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE}
	inactive := &clusterv1.StormBase{Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE}
	killed := &clusterv1.StormBase{Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED}
	storms := map[string]*clusterv1.StormBase{"moved": active, "paused": inactive, "dying": killed}
	for id, want := range map[string]bool{"moved": true, "paused": true, "dying": false, "gone": false} {
		if got := cluster.Lives(storms[id]); got != want {
			t.Errorf("Lives(%s) = %v, want %v", id, got, want)
		}
	}
}
