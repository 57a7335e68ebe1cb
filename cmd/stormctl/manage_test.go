package main

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// leaderWith serves a leader that knows the topology wordcount. Its
// leader-only RPCs answer err if it is not nil, NotFound for another name,
// or success.
func leaderWith(t *testing.T, err error) (string, *fakenimbus.Server) {
	t.Helper()
	topologies := map[string]*nimbusv1.GetTopologyInfoResponse{"wordcount": testTopology()}
	f := reader(nil, topologies)
	byName := func(name string) error {
		if err != nil {
			return err
		}
		if _, ok := topologies[name]; !ok {
			return errNotFound
		}
		return nil
	}
	f.OnKill = func(req *nimbusv1.KillTopologyRequest) error { return byName(req.GetName()) }
	f.OnActivate = func(req *nimbusv1.ActivateTopologyRequest) error { return byName(req.GetName()) }
	f.OnDeactivate = func(req *nimbusv1.DeactivateTopologyRequest) error { return byName(req.GetName()) }
	f.OnRebalance = func(req *nimbusv1.RebalanceTopologyRequest) error { return byName(req.GetName()) }
	return serveLeader(t, f), f
}

func int32p(n int32) *int32 { return &n }

// checkRequests fails unless f received exactly want.
func checkRequests(t *testing.T, f *fakenimbus.Server, want ...proto.Message) {
	t.Helper()
	got := f.Requests(leaderOnly...)
	if len(got) != len(want) {
		t.Fatalf("the leader got %d requests %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("request %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestRunManageCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		line string
		req  proto.Message
		to   clusterv1.TopologyStatus // the status -o json shows
	}{
		{
			[]string{"kill", "wordcount", "--wait", "30"}, "killed wordcount (removal in 30s)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: int32p(30)}, killed,
		},
		{
			[]string{"kill", "--wait=0", "wordcount"}, "killed wordcount (removal in 0s)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: int32p(0)}, killed,
		},
		{
			[]string{"kill", "wordcount"}, "killed wordcount (removal after topology.message.timeout.secs)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount"}, killed,
		},
		{
			[]string{"activate", "wordcount"}, "activated wordcount\n",
			&nimbusv1.ActivateTopologyRequest{Name: "wordcount"}, clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
		},
		{
			[]string{"deactivate", "wordcount"}, "deactivated wordcount\n",
			&nimbusv1.DeactivateTopologyRequest{Name: "wordcount"}, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE,
		},
		{
			[]string{"rebalance", "wordcount", "--wait", "10", "--workers", "4", "--component", "split=8", "--component", "count=3"},
			"rebalancing wordcount (workers=4, split=8, count=3, rescheduling in 10s)\n",
			&nimbusv1.RebalanceTopologyRequest{
				Name: "wordcount", WaitSecs: int32p(10), NumWorkers: int32p(4),
				ComponentParallelism: map[string]int32{"split": 8, "count": 3},
			},
			rebalancing,
		},
		{
			// Storm's short forms.
			[]string{"rebalance", "wordcount", "-w", "10", "-n", "4", "-e", "split=8", "-e", "count=3"},
			"rebalancing wordcount (workers=4, split=8, count=3, rescheduling in 10s)\n",
			&nimbusv1.RebalanceTopologyRequest{
				Name: "wordcount", WaitSecs: int32p(10), NumWorkers: int32p(4),
				ComponentParallelism: map[string]int32{"split": 8, "count": 3},
			},
			rebalancing,
		},
		{
			[]string{"kill", "wordcount", "-w", "5"}, "killed wordcount (removal in 5s)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: int32p(5)}, killed,
		},
		{
			[]string{"rebalance", "wordcount"}, "rebalancing wordcount (rescheduling after topology.message.timeout.secs)\n",
			&nimbusv1.RebalanceTopologyRequest{Name: "wordcount"}, rebalancing,
		},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			addr, f := leaderWith(t, nil)
			if got := runOK(t, append([]string{"--seeds", addr}, tc.args...)...); got != tc.line {
				t.Errorf("%q: got %q, want %q", tc.args, got, tc.line)
			}
			// -o json: the topology as the change left it.
			out := runOK(t, append([]string{"--seeds", addr, "-o", "json"}, tc.args...)...)
			want := testTopology().GetTopology()
			want.Status = tc.to
			var got nimbusv1.TopologySummary
			unmarshal(t, out, &got)
			if !proto.Equal(&got, want) {
				t.Errorf("%q -o json: got %v, want %v", tc.args, &got, want)
			}
			if status := `"status": "` + statusName(tc.to) + `"`; !strings.Contains(out, status) {
				t.Errorf("%q -o json: want %s in\n%s", tc.args, status, out)
			}
			checkRequests(t, f, tc.req, tc.req)
		})
	}
}

var (
	killed      = clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED
	rebalancing = clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING
)

func TestRunManageJSONWhenTheReadBackFails(t *testing.T) {
	// A topology killed with no wait may be gone when it is read back:
	// its name and status are still the answer.
	f := reader(nil, nil)
	f.OnKill = func(*nimbusv1.KillTopologyRequest) error { return nil }
	f.OnDeactivate = func(*nimbusv1.DeactivateTopologyRequest) error { return nil }
	addr := serveLeader(t, f)
	var got nimbusv1.TopologySummary
	unmarshal(t, runOK(t, "--seeds", addr, "-o", "json", "kill", "gone", "-w", "0"), &got)
	if want := (&nimbusv1.TopologySummary{Name: "gone", Status: killed}); !proto.Equal(&got, want) {
		t.Errorf("kill -o json: got %v, want %v", &got, want)
	}

	// Any other failure to read it back: the change happened, so the
	// command succeeds, and a warning says why the summary is short.
	f.OnGetTopologyInfo = func(*nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
		return nil, status.Error(codes.PermissionDenied, "nimbus: permission denied: carol may not read x")
	}
	code, stdout, stderr := runArgs("--seeds", addr, "-o", "json", "deactivate", "x")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	unmarshal(t, stdout, &got)
	if want := (&nimbusv1.TopologySummary{Name: "x", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE}); !proto.Equal(&got, want) {
		t.Errorf("deactivate -o json: got %v, want %v", &got, want)
	}
	if !strings.HasPrefix(stderr, "stormctl: warning: x is inactive, but reading it back failed: ") || !strings.Contains(stderr, "carol may not read x") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestRunManageWrongStatusInPlainWords(t *testing.T) {
	addr, _ := leaderWith(t, status.Error(codes.FailedPrecondition,
		"nimbus: action not allowed in the topology's status: wordcount is TOPOLOGY_STATUS_KILLED"))
	stderr := runFails(t, exitWrongStatus, "--seeds", addr, "activate", "wordcount")
	if want := "stormctl: activate wordcount: action not allowed in the topology's status: wordcount is killed\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	// -o json: the same words, and the code, as a JSON object on stderr.
	code, stdout, stderr := runArgs("--seeds", addr, "-o", "json", "activate", "wordcount")
	var doc struct {
		Error struct {
			Message  string `json:"message"`
			Code     string `json:"code"`
			ExitCode int    `json:"exitCode"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(stderr), &doc); err != nil || code != exitWrongStatus || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q (%v)", code, stdout, stderr, err)
	}
	if doc.Error.Code != "FAILED_PRECONDITION" || doc.Error.ExitCode != exitWrongStatus ||
		doc.Error.Message != "activate wordcount: action not allowed in the topology's status: wordcount is killed" {
		t.Errorf("JSON error %+v", doc.Error)
	}
}

func TestRunManageNotFound(t *testing.T) {
	addr, f := leaderWith(t, nil)
	for _, cmd := range []string{"kill", "activate", "deactivate", "rebalance"} {
		stderr := runFails(t, exitNotFound, "--seeds", addr, cmd, "nosuch")
		if want := "stormctl: " + cmd + " nosuch: topology not found\n"; stderr != want {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
	}
	if n := len(f.Requests(leaderOnly...)); n != 4 {
		t.Errorf("the leader got %d requests, want 4: NotFound is not retried", n)
	}
}

func TestRunRebalanceUnimplemented(t *testing.T) {
	addr, _ := leaderWith(t, status.Error(codes.Unimplemented, "method RebalanceTopology not implemented"))
	stderr := runFails(t, exitError, "--seeds", addr, "rebalance", "wordcount", "--workers", "3")
	if want := "stormctl: rebalance wordcount: method RebalanceTopology not implemented\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

func TestRunManageInvalidArgument(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "wait_secs: must be at most 86400, got 99999").WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "wait_secs", Description: "must be at most 86400, got 99999"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	addr, f := leaderWith(t, st.Err())
	stderr := runFails(t, exitInvalid, "--seeds", addr, "kill", "wordcount", "--wait", "99999")
	if want := "stormctl: kill wordcount: wait_secs: must be at most 86400, got 99999\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if n := len(f.Requests(leaderOnly...)); n != 1 {
		t.Errorf("the leader got %d requests, want 1: InvalidArgument is not retried", n)
	}
}

func TestRunManageUsageErrors(t *testing.T) {
	addr := testcluster.ClosedAddr(t) // a usage error makes no RPC, so nothing need listen
	for _, tc := range []struct {
		args []string
		want string // in the error line
	}{
		{[]string{"kill"}, "kill: missing NAME"},
		{[]string{"kill", "a", "b"}, `extra argument "b"`},
		{[]string{"activate"}, "activate: missing NAME"},
		{[]string{"deactivate", "a", "b"}, `extra argument "b"`},
		{[]string{"rebalance"}, "rebalance: missing NAME"},
		{[]string{"kill", "wordcount", "--wait", "-1"}, "--wait -1"},
		{[]string{"kill", "wordcount", "--wait", "soon"}, "--wait"},
		{[]string{"kill", "wordcount", "--wait", "4294967296"}, "--wait"},
		{[]string{"rebalance", "wordcount", "--wait", "-5"}, "--wait -5"},
		{[]string{"rebalance", "wordcount", "--workers", "0"}, "--workers 0"},
		{[]string{"rebalance", "wordcount", "--workers", "-2"}, "--workers -2"},
		{[]string{"rebalance", "wordcount", "--component", "split"}, `--component "split": want ID=PARALLELISM`},
		{[]string{"rebalance", "wordcount", "--component", "=3"}, `--component "=3": want ID=PARALLELISM`},
		{[]string{"rebalance", "wordcount", "--component", "split="}, `--component "split=": want ID=PARALLELISM`},
		{[]string{"rebalance", "wordcount", "--component", "split=x"}, `parallelism "x"`},
		{[]string{"rebalance", "wordcount", "--component", "split=-1"}, `parallelism "-1"`},
		{[]string{"rebalance", "wordcount", "--component", "split=0"}, `parallelism "0"`},
		{[]string{"rebalance", "wordcount", "--component", "split=1.5"}, `parallelism "1.5"`},
		{[]string{"rebalance", "wordcount", "--component", "split=1", "--component", "split=2"}, `component "split" given twice`},
		{[]string{"activate", "wordcount", "--wait", "3"}, "unknown flag: --wait"},
		{[]string{"kill", "wordcount", "-w", "-1"}, "--wait -1"},
		{[]string{"rebalance", "wordcount", "-n", "0"}, "--workers 0"},
		{[]string{"rebalance", "wordcount", "-e", "split"}, `--component "split": want ID=PARALLELISM`},
	} {
		stderr := runFails(t, exitUsage, append([]string{"--seeds", addr}, tc.args...)...)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: stderr %q, want it to contain %q", tc.args, stderr, tc.want)
		}
	}
}
