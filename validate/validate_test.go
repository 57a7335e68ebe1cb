package validate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// validSpec returns a fresh spec that passes Spec; cases mutate it.
func validSpec() *nimbusv1.TopologySpec {
	return &nimbusv1.TopologySpec{
		Name:       "word-count_v1.2",
		NumWorkers: 3,
		Components: []*nimbusv1.ComponentSpec{
			{Id: "sentences", Parallelism: 2},
			{Id: "split", Parallelism: 8},
			{Id: "count:v2", Parallelism: 12},
		},
		WorkerCommand: []string{"java", "-cp", "{code_dir}/stormjar.jar", "org.example.Worker", "{port}", "{topology_id}"},
		Config:        map[string]string{"topology.workers": "3", "topology.message.timeout.secs": "30"},
		InitialStatus: nimbusv1.InitialStatus_INITIAL_STATUS_INACTIVE,
		Owner:         "Jürgen",
	}
}

// checkField fails t unless err is nil (want == "") or a *Error
// for exactly the field want.
func checkField(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	var ve *Error
	if !errors.As(err, &ve) {
		t.Fatalf("got error %v (%T), want a *Error for %s", err, err, want)
	}
	if ve.Field != want {
		t.Fatalf("got field %q (%v), want %q", ve.Field, err, want)
	}
	if ve.Reason == "" {
		t.Fatalf("field %s: empty reason", ve.Field)
	}
}

func components(n int, parallelism int32) []*nimbusv1.ComponentSpec {
	cs := make([]*nimbusv1.ComponentSpec, n)
	for i := range cs {
		cs[i] = &nimbusv1.ComponentSpec{Id: "c" + strconv.Itoa(i), Parallelism: parallelism}
	}
	return cs
}

func repeatedArgs(n int) []string {
	args := make([]string, n)
	for i := range args {
		args[i] = "x"
	}
	return args
}

func manyConfig(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m["k"+strconv.Itoa(i)] = "v"
	}
	return m
}

func TestValidateSpec(t *testing.T) {
	long := strings.Repeat("a", 129)
	longKey := strings.Repeat("k", 257)
	for _, tc := range []struct {
		name     string
		mutate   func(s *nimbusv1.TopologySpec)
		field    string // "" means valid
		inReason string // if set, the reason must contain it
	}{
		{name: "valid", mutate: func(*nimbusv1.TopologySpec) {}},
		{name: "minimal", mutate: func(s *nimbusv1.TopologySpec) {
			s.Config, s.Owner, s.InitialStatus = nil, "", nimbusv1.InitialStatus_INITIAL_STATUS_UNSPECIFIED
			s.WorkerCommand = []string{"w"}
		}},
		{name: "name 128 chars", mutate: func(s *nimbusv1.TopologySpec) { s.Name = long[:128] }},
		{name: "name starts with a dot", mutate: func(s *nimbusv1.TopologySpec) { s.Name = ".x" }},
		{name: "name traversal", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "../x" }, field: "spec.name", inReason: `got "../x"`},
		{name: "name empty", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "" }, field: "spec.name", inReason: `got ""`},
		{name: "name dotdot", mutate: func(s *nimbusv1.TopologySpec) { s.Name = ".." }, field: "spec.name"},
		{name: "name dot", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "." }, field: "spec.name"},
		{name: "name inner dotdot", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "a..b" }, field: "spec.name"},
		{name: "name slash", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "a/b" }, field: "spec.name", inReason: `"a/b"`},
		{name: "name backslash", mutate: func(s *nimbusv1.TopologySpec) { s.Name = `a\b` }, field: "spec.name"},
		{name: "name 129 chars", mutate: func(s *nimbusv1.TopologySpec) { s.Name = long }, field: "spec.name", inReason: "(129 bytes)"},
		{name: "name space", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "a b" }, field: "spec.name"},
		{name: "name non-ascii", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "zähler" }, field: "spec.name"},
		{name: "name NUL", mutate: func(s *nimbusv1.TopologySpec) { s.Name = "a\x00" }, field: "spec.name"},
		{name: "zero workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers = 0; delete(s.Config, "topology.workers") }, field: "spec.num_workers", inReason: "got 0"},
		{name: "zero workers, topology.workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers = 0 }},
		{name: "workers differ from topology.workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers = 2 },
			field: `spec.config["topology.workers"]`, inReason: "spec.num_workers is 2"},
		{name: "zero workers, bad topology.workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers, s.Config["topology.workers"] = 0, "two" },
			field: `spec.config["topology.workers"]`, inReason: `"two" is not an integer`},
		{name: "negative workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers = -1 }, field: "spec.num_workers"},
		{name: "10000 workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers = 10000; delete(s.Config, "topology.workers") }},
		{name: "10001 workers", mutate: func(s *nimbusv1.TopologySpec) { s.NumWorkers = 10001 }, field: "spec.num_workers"},
		{name: "no components", mutate: func(s *nimbusv1.TopologySpec) { s.Components = nil }, field: "spec.components"},
		{name: "10000 components", mutate: func(s *nimbusv1.TopologySpec) { s.Components = components(10000, 10) }},
		{name: "10001 components", mutate: func(s *nimbusv1.TopologySpec) { s.Components = components(10001, 1) }, field: "spec.components"},
		{name: "nil component", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1] = nil }, field: "spec.components[1]"},
		{name: "component id empty", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Id = "" }, field: "spec.components[1].id"},
		{name: "component id slash", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Id = "a/b" }, field: "spec.components[1].id"},
		{name: "component id 129 chars", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Id = long }, field: "spec.components[1].id"},
		{name: "component id 128 chars", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Id = long[:128] }},
		{name: "duplicate component", mutate: func(s *nimbusv1.TopologySpec) { s.Components[2].Id = "sentences" }, field: "spec.components[2].id", inReason: "spec.components[0].id"},
		{name: "zero parallelism", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Parallelism = 0 }, field: "spec.components[1].parallelism"},
		{name: "negative parallelism", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Parallelism = -3 }, field: "spec.components[1].parallelism", inReason: "got -3"},
		{name: "parallelism 10001", mutate: func(s *nimbusv1.TopologySpec) { s.Components[1].Parallelism = 10001 }, field: "spec.components[1].parallelism"},
		{name: "100000 executors", mutate: func(s *nimbusv1.TopologySpec) { s.Components = components(10, 10000) }},
		{name: "100001 executors", mutate: func(s *nimbusv1.TopologySpec) {
			s.Components = append(components(10, 10000), &nimbusv1.ComponentSpec{Id: "one", Parallelism: 1})
		}, field: "spec.components", inReason: "100001"},
		{name: "no worker command", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand = nil }, field: "spec.worker_command"},
		{name: "empty program", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand = []string{"", "x"} }, field: "spec.worker_command[0]"},
		{name: "256 args", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand = repeatedArgs(256) }},
		{name: "257 args", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand = repeatedArgs(257) }, field: "spec.worker_command"},
		{name: "empty later arg", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand[1] = "" }},
		{name: "arg 4096 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand[1] = strings.Repeat("x", 4096) }},
		{name: "arg 4097 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand[1] = strings.Repeat("x", 4097) }, field: "spec.worker_command[1]"},
		{name: "arg NUL", mutate: func(s *nimbusv1.TopologySpec) { s.WorkerCommand[2] = "a\x00b" }, field: "spec.worker_command[2]"},
		{name: "1000 config entries", mutate: func(s *nimbusv1.TopologySpec) { s.Config = manyConfig(1000) }},
		{name: "1001 config entries", mutate: func(s *nimbusv1.TopologySpec) { s.Config = manyConfig(1001) }, field: "spec.config"},
		{name: "config empty key", mutate: func(s *nimbusv1.TopologySpec) { s.Config[""] = "v" }, field: `spec.config[""]`},
		{name: "config key 256 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.Config[longKey[:256]] = "v" }},
		{name: "config key 257 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.Config[longKey] = "v" },
			field: "spec.config[" + strconv.Quote(longKey[:64]) + "... (257 bytes)]"},
		{name: "config key NUL", mutate: func(s *nimbusv1.TopologySpec) { s.Config["a\x00b"] = "v" }, field: `spec.config["a\x00b"]`},
		{name: "config value 65536 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.Config["big"] = strings.Repeat("v", 65536) }},
		{name: "config value 65537 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.Config["big"] = strings.Repeat("v", 65537) }, field: `spec.config["big"]`},
		{name: "owner 128 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.Owner = long[:128] }},
		{name: "owner 129 bytes", mutate: func(s *nimbusv1.TopologySpec) { s.Owner = long }, field: "spec.owner"},
		{name: "owner bad UTF-8", mutate: func(s *nimbusv1.TopologySpec) { s.Owner = "a\xffb" }, field: "spec.owner"},
		{name: "owner newline", mutate: func(s *nimbusv1.TopologySpec) { s.Owner = "a\nb" }, field: "spec.owner"},
		{name: "owner escape", mutate: func(s *nimbusv1.TopologySpec) { s.Owner = "\x1b[31mroot" }, field: "spec.owner"},
		{name: "owner C1 control", mutate: func(s *nimbusv1.TopologySpec) { s.Owner = "a\u0085" }, field: "spec.owner"},
		{name: "bad enum", mutate: func(s *nimbusv1.TopologySpec) { s.InitialStatus = 3 }, field: "spec.initial_status", inReason: "got 3"},
		{name: "negative enum", mutate: func(s *nimbusv1.TopologySpec) { s.InitialStatus = -1 }, field: "spec.initial_status"},
		{name: "first problem wins", mutate: func(s *nimbusv1.TopologySpec) {
			s.NumWorkers, s.Components, s.Owner = 0, nil, "\n"
			delete(s.Config, "topology.workers")
		}, field: "spec.num_workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(s)
			err := Spec(s)
			checkField(t, err, tc.field)
			if tc.inReason != "" && !strings.Contains(err.Error(), tc.inReason) {
				t.Errorf("error %q does not contain %q", err, tc.inReason)
			}
		})
	}
}

func TestValidateSpecNil(t *testing.T) {
	checkField(t, Spec(nil), "spec")
}

// Reasons show the bad value, but never all of a huge one.
func TestReasonTruncatesValues(t *testing.T) {
	s := validSpec()
	s.Name = strings.Repeat("/", 1<<20)
	err := Spec(s)
	checkField(t, err, "spec.name")
	if n := len(err.Error()); n > 300 {
		t.Errorf("error is %d bytes long: %.100q...", n, err)
	}
	// A multi-byte character at the cut is not split.
	if got := showValue(strings.Repeat("a", 63) + "ü" + strings.Repeat("b", 10)); got != `"`+strings.Repeat("a", 63)+`"... (75 bytes)` {
		t.Errorf("showValue = %s", got)
	}
}

// Map keys are checked in sorted order, so the same request always names
// the same field, whatever the map's iteration order.
func TestMapKeyErrorsAreDeterministic(t *testing.T) {
	spec := validSpec()
	for _, k := range []string{"zeta\x00", "mu\x00", "beta\x00", "omega\x00", "alpha\x00", "pi\x00"} {
		spec.Config[k] = "v"
	}
	reb := &nimbusv1.RebalanceTopologyRequest{Name: "wc", ComponentParallelism: map[string]int32{
		"zeta": 0, "mu": -1, "beta": 0, "omega": 20000, "alpha": 0, "pi": 0,
	}}
	for range 100 {
		checkField(t, Spec(spec), `spec.config["alpha\x00"]`)
		checkField(t, Rebalance(reb), `component_parallelism["alpha"]`)
	}
}

func TestValidateRequests(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	nameCases := []struct {
		name  string
		field string
	}{
		{"wordcount", ""},
		{"../x", "name"},
		{"", "name"},
		{"..", "name"},
		{".", "name"},
		{"a/b", "name"},
		{strings.Repeat("n", 129), "name"},
	}
	for _, nc := range nameCases {
		t.Run("name "+strconv.Quote(nc.name), func(t *testing.T) {
			checkField(t, Kill(&nimbusv1.KillTopologyRequest{Name: nc.name}), nc.field)
			checkField(t, Activate(&nimbusv1.ActivateTopologyRequest{Name: nc.name}), nc.field)
			checkField(t, Deactivate(&nimbusv1.DeactivateTopologyRequest{Name: nc.name}), nc.field)
			checkField(t, Rebalance(&nimbusv1.RebalanceTopologyRequest{Name: nc.name}), nc.field)
			checkField(t, GetTopologyInfo(&nimbusv1.GetTopologyInfoRequest{Name: nc.name}), nc.field)
		})
	}
	t.Run("nil requests", func(t *testing.T) {
		checkField(t, Kill(nil), "name")
		checkField(t, Activate(nil), "name")
		checkField(t, Deactivate(nil), "name")
		checkField(t, Rebalance(nil), "name")
		checkField(t, GetTopologyInfo(nil), "name")
	})

	for _, tc := range []struct {
		name  string
		req   proto.Message
		field string
	}{
		{"kill wait unset", &nimbusv1.KillTopologyRequest{Name: "wc"}, ""},
		{"kill wait 0", &nimbusv1.KillTopologyRequest{Name: "wc", WaitSecs: i32(0)}, ""},
		{"kill wait 86400", &nimbusv1.KillTopologyRequest{Name: "wc", WaitSecs: i32(86400)}, ""},
		{"kill wait -1", &nimbusv1.KillTopologyRequest{Name: "wc", WaitSecs: i32(-1)}, "wait_secs"},
		{"kill wait 86401", &nimbusv1.KillTopologyRequest{Name: "wc", WaitSecs: i32(86401)}, "wait_secs"},
		{"rebalance wait -1", &nimbusv1.RebalanceTopologyRequest{Name: "wc", WaitSecs: i32(-1)}, "wait_secs"},
		{"rebalance wait 86401", &nimbusv1.RebalanceTopologyRequest{Name: "wc", WaitSecs: i32(86401)}, "wait_secs"},
		{"rebalance full", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", WaitSecs: i32(10), NumWorkers: i32(10000),
			ComponentParallelism: map[string]int32{"split": 1, "count:v2": 10000},
		}, ""},
		{"rebalance workers 0", &nimbusv1.RebalanceTopologyRequest{Name: "wc", NumWorkers: i32(0)}, "num_workers"},
		{"rebalance workers 10001", &nimbusv1.RebalanceTopologyRequest{Name: "wc", NumWorkers: i32(10001)}, "num_workers"},
		{"rebalance parallelism 0", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", ComponentParallelism: map[string]int32{"split": 0},
		}, `component_parallelism["split"]`},
		{"rebalance parallelism -2", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", ComponentParallelism: map[string]int32{"split": -2},
		}, `component_parallelism["split"]`},
		{"rebalance parallelism 10001", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", ComponentParallelism: map[string]int32{"split": 10001},
		}, `component_parallelism["split"]`},
		{"rebalance bad component id", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", ComponentParallelism: map[string]int32{"a/b": 1},
		}, `component_parallelism["a/b"]`},
		{"rebalance empty component id", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", ComponentParallelism: map[string]int32{"": 1},
		}, `component_parallelism[""]`},
		{"rebalance too many components", &nimbusv1.RebalanceTopologyRequest{
			Name: "wc", ComponentParallelism: manyParallelism(10001),
		}, "component_parallelism"},
		{"cluster info, all of it", &nimbusv1.GetClusterInfoRequest{}, ""},
		{"cluster info, filtered and paged", &nimbusv1.GetClusterInfoRequest{
			Topologies: []string{"wc", "wc-1-1400000000"}, Supervisors: []string{"sup-1", "10.0.0.5"}, PageSize: 100,
		}, ""},
		{"cluster info, negative page size", &nimbusv1.GetClusterInfoRequest{PageSize: -1}, "page_size"},
		{"cluster info, bad topology", &nimbusv1.GetClusterInfoRequest{Topologies: []string{"wc", "../x"}}, "topologies[1]"},
		{"cluster info, empty supervisor", &nimbusv1.GetClusterInfoRequest{Supervisors: []string{""}}, "supervisors[0]"},
		{"cluster info, supervisor with a space", &nimbusv1.GetClusterInfoRequest{Supervisors: []string{"a b"}}, "supervisors[0]"},
		{"cluster info, too many topologies", &nimbusv1.GetClusterInfoRequest{Topologies: slices.Repeat([]string{"wc"}, 1001)}, "topologies"},
		{"handover to the next", &nimbusv1.HandOverRequest{}, ""},
		{"handover to a named nimbus", &nimbusv1.HandOverRequest{To: "nimbus-2.example.com:6627"}, ""},
		{"handover to an IPv6 nimbus", &nimbusv1.HandOverRequest{To: "[::1]:6627"}, ""},
		{"handover without a port", &nimbusv1.HandOverRequest{To: "nimbus-2"}, "to"},
		{"handover without a host", &nimbusv1.HandOverRequest{To: ":6627"}, "to"},
		{"restart a worker", &nimbusv1.RestartWorkerRequest{Name: "wordcount", Worker: "host-1:6700"}, ""},
		{"restart a worker of an id", &nimbusv1.RestartWorkerRequest{Name: "wordcount-1-1700000000", Worker: "host-1:6700"}, ""},
		{"restart no worker", &nimbusv1.RestartWorkerRequest{Name: "wordcount"}, "worker"},
		{"restart a worker without a port", &nimbusv1.RestartWorkerRequest{Name: "wordcount", Worker: "host-1"}, "worker"},
		{"restart a worker at port 0", &nimbusv1.RestartWorkerRequest{Name: "wordcount", Worker: "host-1:0"}, "worker"},
		{"restart a worker of no topology", &nimbusv1.RestartWorkerRequest{Worker: "host-1:6700"}, "name"},
		{"handover to port 0", &nimbusv1.HandOverRequest{To: "n:0"}, "to"},
		{"handover to port 65536", &nimbusv1.HandOverRequest{To: "n:65536"}, "to"},
		{"handover to a named port", &nimbusv1.HandOverRequest{To: "n:http"}, "to"},
		{"handover to a host with a space", &nimbusv1.HandOverRequest{To: "a b:1"}, "to"},
		{"handover to a host too long", &nimbusv1.HandOverRequest{To: strings.Repeat("h", 254) + ":1"}, "to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch req := tc.req.(type) {
			case *nimbusv1.KillTopologyRequest:
				err = Kill(req)
			case *nimbusv1.RebalanceTopologyRequest:
				err = Rebalance(req)
			case *nimbusv1.GetClusterInfoRequest:
				err = GetClusterInfo(req)
			case *nimbusv1.HandOverRequest:
				err = HandOver(req)
			case *nimbusv1.RestartWorkerRequest:
				err = RestartWorker(req)
			default:
				t.Fatalf("unexpected request %T", req)
			}
			checkField(t, err, tc.field)
		})
	}
}

func manyParallelism(n int) map[string]int32 {
	m := make(map[string]int32, n)
	for i := range n {
		m["c"+strconv.Itoa(i)] = 1
	}
	return m
}

func TestValidateTopologyID(t *testing.T) {
	for _, tc := range []struct {
		id, field string
	}{
		{"wordcount-1-1400000000", ""},
		{"word-count-7-1400000000", ""},
		{"a-1-2-3", ""}, // name "a-1"
		{"a--1-2", ""},  // name "a-"
		{"x-0000000001-0", ""},
		{"x-9223372036854775807-9223372036854775807", ""},
		{"", "topology_id"},
		{"wordcount", "topology_id"},
		{"wordcount-1", "topology_id"},
		{"-1-2", "topology_id"},
		{"..-1-2", "topology_id"},
		{".-1-2", "topology_id"},
		{"../x-1-2", "topology_id"},
		{"a/b-1-2", "topology_id"},
		{strings.Repeat("n", 129) + "-1-2", "topology_id"},
		{"wc--2", "topology_id"},
		{"wc-1-", "topology_id"},
		{"wc-+1-2", "topology_id"},
		{"wc-1-+2", "topology_id"},
		{"wc-1-2 ", "topology_id"},
		{"wc-1-0x10", "topology_id"},
		{"wc-1-9223372036854775808", "topology_id"},
		{"wc-١-2", "topology_id"}, // a non-ASCII digit
	} {
		t.Run(strconv.Quote(tc.id), func(t *testing.T) {
			checkField(t, TopologyID("topology_id", tc.id), tc.field)
		})
	}
}

// topologyID builds ids that TopologyID accepts and that split back
// into their parts. FuzzTopologyID explores further.
func TestTopologyIDRoundTrip(t *testing.T) {
	const alphabet = "abcXYZ019_.-"
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		b := make([]byte, 1+rng.IntN(maxTopologyNameLen))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		name := string(b)
		if TopologyName("name", name) != nil {
			continue
		}
		counter, secs := rng.Int64(), rng.Int64()
		switch i % 4 { // the edges, often
		case 0:
			counter = 0
		case 1:
			secs = math.MaxInt64
		case 2:
			counter, secs = math.MaxInt64, 0
		}
		id := NewTopologyID(name, counter, time.Unix(secs, 0))
		gotName, gotCounter, gotSecs, err := SplitTopologyID("topology_id", id)
		if err != nil {
			t.Fatalf("NewTopologyID(%q, %d, %d) = %q: %v", name, counter, secs, id, err)
		}
		if gotName != name || gotCounter != counter || gotSecs != secs {
			t.Fatalf("split(%q) = %q, %d, %d; want %q, %d, %d", id, gotName, gotCounter, gotSecs, name, counter, secs)
		}
	}
	if got := NewTopologyID("wordcount", 1, time.Unix(1400000000, 0)); got != "wordcount-1-1400000000" {
		t.Errorf("topologyID = %q", got)
	}
}

func TestValidateCodeFileName(t *testing.T) {
	for _, tc := range []struct {
		name, field string
	}{
		{"stormjar.jar", ""},
		{"stormconf.ser", ""},
		{".hidden", ""},
		{"a..b", ""},
		{strings.Repeat("f", 255), ""},
		{"", "file"},
		{".", "file"},
		{"..", "file"},
		{"a/b", "file"},
		{"/etc/passwd", "file"},
		{"../stormjar.jar", "file"},
		{`a\b`, "file"},
		{"a b", "file"},
		{"a\x00", "file"},
		{strings.Repeat("f", 256), "file"},
	} {
		t.Run(strconv.Quote(tc.name), func(t *testing.T) {
			checkField(t, CodeFileName("file", tc.name), tc.field)
		})
	}
}

// Keys of the topology's conf that Nimbus-HA reads are checked at submit,
// and a rebalance's plan may not ask for more executors than a spec may.
func TestTopologyConfAndRebalanceTotals(t *testing.T) {
	spec := validSpec()
	spec.Config[configs.TopologyEnvironment] = "STORM_PORT=1"
	checkField(t, Spec(spec), `spec.config["topology.environment"]`)
	spec.Config[configs.TopologyEnvironment] = "JAVA_OPTS=-Xmx1g, TZ=UTC"
	checkField(t, Spec(spec), "")

	plan := map[string]int32{}
	for i := range 11 {
		plan[fmt.Sprintf("c%d", i)] = maxParallelism
	}
	checkField(t, Rebalance(&nimbusv1.RebalanceTopologyRequest{Name: "wc", ComponentParallelism: plan}), "component_parallelism")
}

func TestSetLogConfig(t *testing.T) {
	lvl := func(target, reset string, secs int32) *clusterv1.LoggerLevel {
		return &clusterv1.LoggerLevel{TargetLevel: target, ResetLevel: reset, TimeoutSecs: secs}
	}
	many := map[string]*clusterv1.LoggerLevel{}
	for i := range MaxLoggers + 1 {
		many[fmt.Sprintf("l%d", i)] = lvl("INFO", "", 0)
	}
	for _, tc := range []struct {
		name  string
		req   *nimbusv1.SetLogConfigRequest
		field string // "" when valid
	}{
		{"root to debug for a minute", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"ROOT": lvl("debug", "INFO", 60)}}, ""},
		{"remove one", &nimbusv1.SetLogConfigRequest{Name: "wc", Remove: []string{"com.example"}}, ""},
		{"nothing", &nimbusv1.SetLogConfigRequest{Name: "wc"}, "set"},
		{"no topology", &nimbusv1.SetLogConfigRequest{Remove: []string{"ROOT"}}, "name"},
		{"unknown level", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"ROOT": lvl("LOUD", "", 0)}}, `set["ROOT"].target_level`},
		{"unknown reset level", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"ROOT": lvl("DEBUG", "quiet", 0)}}, `set["ROOT"].reset_level`},
		{"negative timeout", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"ROOT": lvl("DEBUG", "", -1)}}, `set["ROOT"].timeout_secs`},
		{"timeout of a year", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"ROOT": lvl("DEBUG", "", 365*24*3600)}}, `set["ROOT"].timeout_secs`},
		{"a name with a space", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"a b": lvl("DEBUG", "", 0)}}, `set["a b"]`},
		{"an empty name removed", &nimbusv1.SetLogConfigRequest{Name: "wc", Remove: []string{"ROOT", ""}}, "remove[1]"},
		{"set and removed", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: map[string]*clusterv1.LoggerLevel{"ROOT": lvl("DEBUG", "", 0)}, Remove: []string{"ROOT"}}, "remove[0]"},
		{"too many", &nimbusv1.SetLogConfigRequest{Name: "wc", Set: many}, "set"},
	} {
		err := SetLogConfig(tc.req)
		var verr *Error
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &verr) || verr.Field != tc.field):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
}
