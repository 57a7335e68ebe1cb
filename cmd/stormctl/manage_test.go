package main

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testcluster"
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
		resp proto.Message
	}{
		{
			[]string{"kill", "wordcount", "--wait", "30"}, "killed wordcount (removal in 30s)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: int32p(30)}, &nimbusv1.KillTopologyResponse{},
		},
		{
			[]string{"kill", "--wait=0", "wordcount"}, "killed wordcount (removal in 0s)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: int32p(0)}, &nimbusv1.KillTopologyResponse{},
		},
		{
			[]string{"kill", "wordcount"}, "killed wordcount (removal after topology.message.timeout.secs)\n",
			&nimbusv1.KillTopologyRequest{Name: "wordcount"}, &nimbusv1.KillTopologyResponse{},
		},
		{
			[]string{"activate", "wordcount"}, "activated wordcount\n",
			&nimbusv1.ActivateTopologyRequest{Name: "wordcount"}, &nimbusv1.ActivateTopologyResponse{},
		},
		{
			[]string{"deactivate", "wordcount"}, "deactivated wordcount\n",
			&nimbusv1.DeactivateTopologyRequest{Name: "wordcount"}, &nimbusv1.DeactivateTopologyResponse{},
		},
		{
			[]string{"rebalance", "wordcount", "--wait", "10", "--workers", "4", "--component", "split=8", "--component", "count=3"},
			"rebalancing wordcount (workers=4, split=8, count=3, rescheduling in 10s)\n",
			&nimbusv1.RebalanceTopologyRequest{
				Name: "wordcount", WaitSecs: int32p(10), NumWorkers: int32p(4),
				ComponentParallelism: map[string]int32{"split": 8, "count": 3},
			},
			&nimbusv1.RebalanceTopologyResponse{},
		},
		{
			[]string{"rebalance", "wordcount"}, "rebalancing wordcount (rescheduling after topology.message.timeout.secs)\n",
			&nimbusv1.RebalanceTopologyRequest{Name: "wordcount"}, &nimbusv1.RebalanceTopologyResponse{},
		},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			addr, f := leaderWith(t, nil)
			if got := runOK(t, append([]string{"--seeds", addr}, tc.args...)...); got != tc.line {
				t.Errorf("%q: got %q, want %q", tc.args, got, tc.line)
			}
			out := runOK(t, append([]string{"--seeds", addr, "-o", "json"}, tc.args...)...)
			if out != "{}\n" {
				t.Errorf("%q -o json: got %q, want {}", tc.args, out)
			}
			unmarshal(t, out, proto.Clone(tc.resp))
			checkRequests(t, f, tc.req, tc.req)
		})
	}
}

func TestRunManageNotFound(t *testing.T) {
	addr, f := leaderWith(t, nil)
	for _, cmd := range []string{"kill", "activate", "deactivate", "rebalance"} {
		stderr := runFails(t, exitError, "--seeds", addr, cmd, "nosuch")
		if want := "stormctl: " + cmd + " nosuch: NotFound: nimbus: topology not found\n"; stderr != want {
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
	if want := "stormctl: rebalance wordcount: Unimplemented: method RebalanceTopology not implemented\n"; stderr != want {
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
	stderr := runFails(t, exitError, "--seeds", addr, "kill", "wordcount", "--wait", "99999")
	if want := "stormctl: kill wordcount: InvalidArgument: wait_secs: must be at most 86400, got 99999\n"; stderr != want {
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
	} {
		stderr := runFails(t, exitUsage, append([]string{"--seeds", addr}, tc.args...)...)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: stderr %q, want it to contain %q", tc.args, stderr, tc.want)
		}
	}
}
