package main

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// reader returns a fake nimbus whose reads answer from cluster and
// topologies: GetLeader names cluster's first nimbus, and GetTopologyInfo
// answers NotFound for a name not in topologies. Leader-only RPCs answer
// Unimplemented until a test sets them.
func reader(cluster *nimbusv1.ClusterSummary, topologies map[string]*nimbusv1.GetTopologyInfoResponse) *fakenimbus.Server {
	return &fakenimbus.Server{
		OnGetLeader: func() (*nimbusv1.GetLeaderResponse, error) {
			return &nimbusv1.GetLeaderResponse{Leader: cluster.GetNimbuses()[0]}, nil
		},
		OnGetClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
			return &nimbusv1.GetClusterInfoResponse{Cluster: cluster}, nil
		},
		OnGetTopologyInfo: func(req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
			info, ok := topologies[req.GetName()]
			if !ok {
				return nil, errNotFound
			}
			return info, nil
		},
	}
}

// errNotFound is a nimbus's answer for an unknown topology name.
var errNotFound = status.Error(codes.NotFound, "nimbus: topology not found")

// leaderOnly are the RPCs only a leader serves; what they received (a
// submission as its spec) is what tests check reached the leader.
var leaderOnly = []string{"KillTopology", "ActivateTopology", "DeactivateTopology", "RebalanceTopology", "SubmitTopology"}

// serve starts a fake nimbus with cluster until the test ends and returns
// its address.
func serve(t *testing.T, cluster *nimbusv1.ClusterSummary) string {
	t.Helper()
	return reader(cluster, nil).Start(t)
}

// serveLeader serves f as a leader that names itself in GetLeader.
func serveLeader(t *testing.T, f *fakenimbus.Server) string {
	t.Helper()
	lis, addr := fakenimbus.Listen(t)
	f.OnGetLeader = fakenimbus.LeaderAt(addr)
	f.Serve(t, lis)
	return addr
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunUnreachableSeed(t *testing.T) {
	addr := testcluster.ClosedAddr(t)
	code, stdout, stderr := runArgs("--seeds", addr, "--timeout", "5s", "leader")
	if code != exitUnavailable {
		t.Errorf("exit code %d, want %d", code, exitUnavailable)
	}
	if want := "stormctl: no nimbus answered at " + addr + " (connection refused)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

func TestRunSeedsFromEnv(t *testing.T) {
	addr := testcluster.ClosedAddr(t)
	t.Setenv(seedsEnv, addr)
	_, _, stderr := runArgs("nimbuses")
	if want := "stormctl: no nimbus answered at " + addr + " (connection refused)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"--bogus", "leader"},
		{"leader", "extra"},
		{"-o", "yaml", "leader"},
		{"--timeout", "soon", "leader"},
		{"--timeout", "0s", "leader"},
		{"--seeds", "a:b:c", "leader"},
		{"--seeds", " , ", "leader"},
	} {
		code, stdout, stderr := runArgs(args...)
		if code != exitUsage {
			t.Errorf("%q: exit code %d, want %d", args, code, exitUsage)
		}
		if !strings.HasPrefix(stderr, "stormctl: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: stderr %q, want one line starting with stormctl:", args, stderr)
		}
		if stdout != "" {
			t.Errorf("%q: stdout %q, want nothing", args, stdout)
		}
	}
}

func TestRunHelp(t *testing.T) {
	code, stdout, _ := runArgs("--help")
	if code != exitOK || !strings.Contains(stdout, "nimbuses") {
		t.Errorf("--help: exit code %d, stdout %q", code, stdout)
	}
}

func TestRunTable(t *testing.T) {
	addr := serve(t, testCluster())
	code, stdout, stderr := runArgs("--seeds", testcluster.ClosedAddr(t)+", "+addr, "leader")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	want := "" +
		"HOST                  PORT  LEADER  EPOCH  ELIGIBLE  UPTIME  VERSION  RELEASE\n" +
		"nimbus-1.example.com  6627  yes     7      yes       3m12s   0.1.0    0.1\n"
	if stdout != want {
		t.Errorf("got:\n%s\nwant:\n%s", stdout, want)
	}
}

func TestRunJSON(t *testing.T) {
	cluster := testCluster()
	addr := serve(t, cluster)

	code, stdout, stderr := runArgs("--seeds", addr, "-o", "json", "cluster")
	if code != exitOK {
		t.Fatalf("cluster: exit code %d, stderr %q", code, stderr)
	}
	var got nimbusv1.GetClusterInfoResponse
	unmarshal(t, stdout, &got)
	if !proto.Equal(got.GetCluster(), cluster) {
		t.Errorf("cluster: got %v, want %v", &got, cluster)
	}

	code, stdout, stderr = runArgs("--seeds", addr, "--output=json", "nimbuses")
	if code != exitOK {
		t.Fatalf("nimbuses: exit code %d, stderr %q", code, stderr)
	}
	var nimbuses nimbusv1.ClusterSummary
	unmarshal(t, stdout, &nimbuses)
	if !proto.Equal(&nimbuses, &nimbusv1.ClusterSummary{Nimbuses: cluster.GetNimbuses()}) {
		t.Errorf("nimbuses: got %v", &nimbuses)
	}
	if !strings.Contains(stdout, "\n  \"nimbuses\": [\n") {
		t.Errorf("nimbuses: want indented JSON, got\n%s", stdout)
	}
}

// runOK runs a command line that must succeed quietly and returns stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runArgs(args...)
	if code != exitOK || stderr != "" {
		t.Fatalf("%q: exit code %d, stderr %q", args, code, stderr)
	}
	return stdout
}

// runFails runs a command line that must fail with code and returns its
// one stderr line, which starts with "stormctl: ".
func runFails(t *testing.T, code int, args ...string) string {
	t.Helper()
	got, stdout, stderr := runArgs(args...)
	if got != code {
		t.Errorf("%q: exit code %d, want %d (stderr %q)", args, got, code, stderr)
	}
	if !strings.HasPrefix(stderr, "stormctl: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("%q: stderr %q, want one line starting with stormctl:", args, stderr)
	}
	if stdout != "" {
		t.Errorf("%q: stdout %q, want nothing", args, stdout)
	}
	return stderr
}

func TestDescribeBadRequest(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "nimbus: invalid request").WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "wait_secs", Description: "must be at least 0, got -1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "kill x: invalid request (wait_secs: must be at least 0, got -1)"
	if got := describe(&opError{op: "kill x", err: st.Err()}); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A message that already names the field is not repeated.
	st, err = status.New(codes.InvalidArgument, "wait_secs: must be at least 0, got -1").WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "wait_secs", Description: "must be at least 0, got -1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(st.Err()), "wait_secs: must be at least 0, got -1"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
