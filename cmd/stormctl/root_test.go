package main

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// closedAddr returns an address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// fakeNimbus is an in-process nimbus. Reads answer from cluster and
// topologies; leader-only RPCs record their requests, then answer err if
// it is set, NotFound for a name not in topologies, or success.
// Submissions are recorded whole and answered with submitResp, or
// redirected to redirectTo after the spec and one chunk.
type fakeNimbus struct {
	nimbusv1.UnimplementedNimbusServiceServer
	cluster    *nimbusv1.ClusterSummary
	topologies map[string]*nimbusv1.GetTopologyInfoResponse
	leader     *nimbusv1.NimbusSummary // GetLeader's answer; nil: cluster's first nimbus
	err        error
	submitResp *nimbusv1.SubmitTopologyResponse
	redirectTo string

	mu          sync.Mutex
	requests    []proto.Message // leader-only requests; a submission's spec
	artifact    []byte          // the last complete submission's
	trailer     []byte
	hadDeadline bool // the last submission's context had a deadline
}

func (f *fakeNimbus) record(req proto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
}

// recorded returns the leader-only requests received so far.
func (f *fakeNimbus) recorded() []proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeNimbus) GetLeader(context.Context, *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	if f.leader != nil {
		return &nimbusv1.GetLeaderResponse{Leader: f.leader}, nil
	}
	return &nimbusv1.GetLeaderResponse{Leader: f.cluster.GetNimbuses()[0]}, nil
}

func (f *fakeNimbus) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return &nimbusv1.GetClusterInfoResponse{Cluster: f.cluster}, nil
}

func (f *fakeNimbus) GetTopologyInfo(_ context.Context, req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
	info, ok := f.topologies[req.GetName()]
	if !ok {
		return nil, status.Error(codes.NotFound, "nimbus: topology not found")
	}
	return info, nil
}

// byName answers a leader-only request for name.
func (f *fakeNimbus) byName(req proto.Message, name string) error {
	f.record(req)
	if f.err != nil {
		return f.err
	}
	if _, ok := f.topologies[name]; !ok {
		return status.Error(codes.NotFound, "nimbus: topology not found")
	}
	return nil
}

func (f *fakeNimbus) KillTopology(_ context.Context, req *nimbusv1.KillTopologyRequest) (*nimbusv1.KillTopologyResponse, error) {
	return &nimbusv1.KillTopologyResponse{}, f.byName(req, req.GetName())
}

func (f *fakeNimbus) ActivateTopology(_ context.Context, req *nimbusv1.ActivateTopologyRequest) (*nimbusv1.ActivateTopologyResponse, error) {
	return &nimbusv1.ActivateTopologyResponse{}, f.byName(req, req.GetName())
}

func (f *fakeNimbus) DeactivateTopology(_ context.Context, req *nimbusv1.DeactivateTopologyRequest) (*nimbusv1.DeactivateTopologyResponse, error) {
	return &nimbusv1.DeactivateTopologyResponse{}, f.byName(req, req.GetName())
}

func (f *fakeNimbus) RebalanceTopology(_ context.Context, req *nimbusv1.RebalanceTopologyRequest) (*nimbusv1.RebalanceTopologyResponse, error) {
	return &nimbusv1.RebalanceTopologyResponse{}, f.byName(req, req.GetName())
}

func (f *fakeNimbus) SubmitTopology(stream grpc.ClientStreamingServer[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]) error {
	_, hasDeadline := stream.Context().Deadline()
	var artifact []byte
	for n := 0; ; n++ {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		if f.redirectTo != "" && n == 1 {
			return notLeaderErr(f.redirectTo)
		}
		switch part := msg.GetPart().(type) {
		case *nimbusv1.SubmitTopologyRequest_Spec:
			f.record(part.Spec)
			if f.err != nil {
				return f.err
			}
		case *nimbusv1.SubmitTopologyRequest_Chunk:
			artifact = append(artifact, part.Chunk...)
		case *nimbusv1.SubmitTopologyRequest_Trailer:
			f.mu.Lock()
			f.artifact, f.trailer, f.hadDeadline = artifact, part.Trailer.GetSha256(), hasDeadline
			f.mu.Unlock()
			return stream.SendAndClose(f.submitResp)
		}
	}
}

// notLeaderErr is a follower's answer naming the leader, as the server's
// one error-mapping place builds it.
func notLeaderErr(leader string) error {
	st, err := status.New(codes.FailedPrecondition, "nimbus: not the leader").WithDetails(&errdetails.ErrorInfo{
		Reason: "NOT_LEADER", Domain: "nimbus.v1", Metadata: map[string]string{"leader": leader},
	})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// serve starts a fake nimbus with cluster until the test ends and returns
// its address.
func serve(t *testing.T, cluster *nimbusv1.ClusterSummary) string {
	t.Helper()
	return serveFake(t, &fakeNimbus{cluster: cluster})
}

// serveFake serves f on 127.0.0.1:0 until the test ends and returns its
// address. f must not change once served.
func serveFake(t *testing.T, f *fakeNimbus) string {
	t.Helper()
	lis := listen(t)
	serveOn(t, lis, f)
	return lis.Addr().String()
}

// serveLeader serves f as a leader that names itself in GetLeader.
func serveLeader(t *testing.T, f *fakeNimbus) string {
	t.Helper()
	lis := listen(t)
	addr := lis.Addr().(*net.TCPAddr)
	f.leader = &nimbusv1.NimbusSummary{Host: addr.IP.String(), Port: int32(addr.Port), IsLeader: true}
	serveOn(t, lis, f)
	return addr.String()
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// serveOn serves f on lis until the test ends.
func serveOn(t *testing.T, lis net.Listener, f *fakeNimbus) {
	t.Helper()
	s := grpc.NewServer()
	nimbusv1.RegisterNimbusServiceServer(s, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunUnreachableSeed(t *testing.T) {
	addr := closedAddr(t)
	code, stdout, stderr := runArgs("--seeds", addr, "--timeout", "5s", "leader")
	if code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	if want := "stormctl: no nimbus answered at " + addr + " (connection refused)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

func TestRunSeedsFromEnv(t *testing.T) {
	addr := closedAddr(t)
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
		{"--seeds", "no-port", "leader"},
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
	code, stdout, stderr := runArgs("--seeds", closedAddr(t)+", "+addr, "leader")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	want := "" +
		"HOST                  PORT  LEADER  EPOCH  ELIGIBLE  UPTIME  VERSION\n" +
		"nimbus-1.example.com  6627  yes     7      yes       3m12s   0.1.0\n"
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
	if err := protojson.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("cluster: output is not a GetClusterInfoResponse: %v\n%s", err, stdout)
	}
	if !proto.Equal(got.GetCluster(), cluster) {
		t.Errorf("cluster: got %v, want %v", &got, cluster)
	}

	code, stdout, stderr = runArgs("--seeds", addr, "--output=json", "nimbuses")
	if code != exitOK {
		t.Fatalf("nimbuses: exit code %d, stderr %q", code, stderr)
	}
	var nimbuses nimbusv1.ClusterSummary
	if err := protojson.Unmarshal([]byte(stdout), &nimbuses); err != nil {
		t.Fatalf("nimbuses: output is not JSON of nimbuses: %v\n%s", err, stdout)
	}
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

// unmarshal parses a command's JSON output into msg.
func unmarshal(t *testing.T, out string, msg proto.Message) {
	t.Helper()
	if err := protojson.Unmarshal([]byte(out), msg); err != nil {
		t.Fatalf("output is not a %T: %v\n%s", msg, err, out)
	}
}

func TestDescribeBadRequest(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "nimbus: invalid request").WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "wait_secs", Description: "must be at least 0, got -1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "kill x: InvalidArgument: nimbus: invalid request (wait_secs: must be at least 0, got -1)"
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
	if got, want := describe(st.Err()), "InvalidArgument: wait_secs: must be at least 0, got -1"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
