package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// fakeNimbus is an in-process NimbusService whose answers each test sets.
// RPCs without a func answer Unimplemented.
type fakeNimbus struct {
	nimbusv1.UnimplementedNimbusServiceServer
	getLeader      func() (*nimbusv1.GetLeaderResponse, error)
	getClusterInfo func() (*nimbusv1.GetClusterInfoResponse, error)
	activate       func(*nimbusv1.ActivateTopologyRequest) error
	deactivate     func(*nimbusv1.DeactivateTopologyRequest) error
	kill           func(*nimbusv1.KillTopologyRequest) error
	rebalance      func(*nimbusv1.RebalanceTopologyRequest) error
	topologyInfo   func(*nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error)
	submit         func(grpc.ClientStreamingServer[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]) error

	calls sync.Map // rpc name -> *atomic.Int32
}

func (f *fakeNimbus) count(rpc string) int {
	n, _ := f.calls.LoadOrStore(rpc, new(atomic.Int32))
	return int(n.(*atomic.Int32).Load())
}

func (f *fakeNimbus) called(rpc string) {
	n, _ := f.calls.LoadOrStore(rpc, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
}

func (f *fakeNimbus) GetLeader(context.Context, *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	f.called("GetLeader")
	if f.getLeader == nil {
		return nil, status.Error(codes.Unimplemented, "GetLeader")
	}
	return f.getLeader()
}

func (f *fakeNimbus) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	f.called("GetClusterInfo")
	if f.getClusterInfo == nil {
		return nil, status.Error(codes.Unimplemented, "GetClusterInfo")
	}
	return f.getClusterInfo()
}

func (f *fakeNimbus) ActivateTopology(_ context.Context, req *nimbusv1.ActivateTopologyRequest) (*nimbusv1.ActivateTopologyResponse, error) {
	f.called("ActivateTopology")
	if f.activate == nil {
		return nil, status.Error(codes.Unimplemented, "ActivateTopology")
	}
	return &nimbusv1.ActivateTopologyResponse{}, f.activate(req)
}

func (f *fakeNimbus) DeactivateTopology(_ context.Context, req *nimbusv1.DeactivateTopologyRequest) (*nimbusv1.DeactivateTopologyResponse, error) {
	f.called("DeactivateTopology")
	if f.deactivate == nil {
		return nil, status.Error(codes.Unimplemented, "DeactivateTopology")
	}
	return &nimbusv1.DeactivateTopologyResponse{}, f.deactivate(req)
}

func (f *fakeNimbus) KillTopology(_ context.Context, req *nimbusv1.KillTopologyRequest) (*nimbusv1.KillTopologyResponse, error) {
	f.called("KillTopology")
	if f.kill == nil {
		return nil, status.Error(codes.Unimplemented, "KillTopology")
	}
	return &nimbusv1.KillTopologyResponse{}, f.kill(req)
}

func (f *fakeNimbus) RebalanceTopology(_ context.Context, req *nimbusv1.RebalanceTopologyRequest) (*nimbusv1.RebalanceTopologyResponse, error) {
	f.called("RebalanceTopology")
	if f.rebalance == nil {
		return nil, status.Error(codes.Unimplemented, "RebalanceTopology")
	}
	return &nimbusv1.RebalanceTopologyResponse{}, f.rebalance(req)
}

func (f *fakeNimbus) GetTopologyInfo(_ context.Context, req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
	f.called("GetTopologyInfo")
	if f.topologyInfo == nil {
		return nil, status.Error(codes.Unimplemented, "GetTopologyInfo")
	}
	return f.topologyInfo(req)
}

func (f *fakeNimbus) SubmitTopology(stream grpc.ClientStreamingServer[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]) error {
	f.called("SubmitTopology")
	if f.submit == nil {
		return status.Error(codes.Unimplemented, "SubmitTopology")
	}
	return f.submit(stream)
}

// listen opens 127.0.0.1:0, so a fake can learn its address before it
// serves: its handlers must be set before serve, which orders them before
// every RPC.
func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis, lis.Addr().String()
}

// start serves f on 127.0.0.1:0 until the test ends and returns its address.
func start(t *testing.T, f *fakeNimbus) string {
	t.Helper()
	lis, addr := listen(t)
	serve(t, lis, f)
	return addr
}

// serve serves f on lis until the test ends.
func serve(t *testing.T, lis net.Listener, f *fakeNimbus) {
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

// leaderAt is a GetLeader answer naming addr.
func leaderAt(t *testing.T, addr string) func() (*nimbusv1.GetLeaderResponse, error) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return func() (*nimbusv1.GetLeaderResponse, error) {
		return &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: host, Port: int32(p), IsLeader: true}}, nil
	}
}

// notLeaderErr is a follower's answer, as nimbus/errors.go builds it.
func notLeaderErr(t *testing.T, leader string) error {
	t.Helper()
	st, err := status.New(codes.FailedPrecondition, "nimbus: not the leader").WithDetails(&errdetails.ErrorInfo{
		Reason: nimbusv1.ReasonNotLeader, Domain: nimbusv1.ErrorDomain, Metadata: map[string]string{nimbusv1.MetadataLeaderKey: leader},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func newClient(t *testing.T, seeds []string, opts ...Option) *Client {
	t.Helper()
	c, err := New(seeds, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewValidatesSeeds(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil): want an error")
	}
	for bad, want := range map[string]string{
		"localhost":  `client: seed "localhost": want host:port`,
		":6627":      `client: seed ":6627": empty host`,
		"host:0":     `client: seed "host:0": port "0" is not in 1-65535`,
		"host:port":  `client: seed "host:port": port "port" is not in 1-65535`,
		"host:70000": `client: seed "host:70000": port "70000" is not in 1-65535`,
	} {
		_, err := New([]string{"127.0.0.1:6627", bad})
		if err == nil || err.Error() != want {
			t.Errorf("New with seed %q: got %v, want %s", bad, err, want)
		}
	}
}

func TestLeaderCallFollowsRedirect(t *testing.T) {
	ctx := testContext(t)
	var activated atomic.Value
	leader := &fakeNimbus{activate: func(req *nimbusv1.ActivateTopologyRequest) error {
		activated.Store(req.GetName())
		return nil
	}}
	leaderAddr := start(t, leader)
	lis, followerAddr := listen(t)
	follower := &fakeNimbus{
		activate: func(*nimbusv1.ActivateTopologyRequest) error { return notLeaderErr(t, leaderAddr) },
		// A stale view: the follower still believes it leads.
		getLeader: leaderAt(t, followerAddr),
	}
	serve(t, lis, follower)

	c := newClient(t, []string{followerAddr})
	if err := c.ActivateTopology(ctx, "wordcount"); err != nil {
		t.Fatalf("ActivateTopology: %v", err)
	}
	if got := activated.Load(); got != "wordcount" {
		t.Errorf("leader activated %v, want wordcount", got)
	}
	// The leader is now cached: the next call goes straight to it.
	if err := c.ActivateTopology(ctx, "wordcount"); err != nil {
		t.Fatalf("second ActivateTopology: %v", err)
	}
	if n := follower.count("ActivateTopology"); n != 1 {
		t.Errorf("follower got %d ActivateTopology calls, want 1", n)
	}
	if n := leader.count("ActivateTopology"); n != 2 {
		t.Errorf("leader got %d ActivateTopology calls, want 2", n)
	}
}

func TestLeaderCallStopsRedirectLoop(t *testing.T) {
	ctx := testContext(t)
	aLis, aAddr := listen(t)
	bLis, bAddr := listen(t)
	a := &fakeNimbus{
		getLeader: leaderAt(t, aAddr),
		activate:  func(*nimbusv1.ActivateTopologyRequest) error { return notLeaderErr(t, bAddr) },
	}
	b := &fakeNimbus{activate: func(*nimbusv1.ActivateTopologyRequest) error { return notLeaderErr(t, aAddr) }}
	serve(t, aLis, a)
	serve(t, bLis, b)

	c := newClient(t, []string{aAddr})
	err := c.ActivateTopology(ctx, "wordcount")
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("got %v, want FailedPrecondition after the redirect limit", err)
	}
	if n := a.count("ActivateTopology") + b.count("ActivateTopology"); n != DefaultMaxRedirects+1 {
		t.Errorf("%d calls, want %d", n, DefaultMaxRedirects+1)
	}
}

func TestLeaderCallRetriesUnavailable(t *testing.T) {
	ctx := testContext(t)
	lis, addr := listen(t)
	leader := &fakeNimbus{getLeader: leaderAt(t, addr)}
	leader.activate = func(*nimbusv1.ActivateTopologyRequest) error {
		if leader.count("ActivateTopology") <= 2 {
			return status.Error(codes.Unavailable, "nimbus: no leader elected")
		}
		return nil
	}
	serve(t, lis, leader)

	c := newClient(t, []string{addr})
	if err := c.ActivateTopology(ctx, "wordcount"); err != nil {
		t.Fatalf("ActivateTopology: %v", err)
	}
	if n := leader.count("ActivateTopology"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestLeaderCallSpendsBudget(t *testing.T) {
	ctx := testContext(t)
	lis, addr := listen(t)
	serve(t, lis, &fakeNimbus{
		getLeader: leaderAt(t, addr),
		activate: func(*nimbusv1.ActivateTopologyRequest) error {
			return status.Error(codes.Unavailable, "nimbus: not ready")
		},
	})

	c := newClient(t, []string{addr}, WithRetry(3, 0))
	err := c.ActivateTopology(ctx, "wordcount")
	if !errors.Is(err, ErrNoLeader) {
		t.Fatalf("got %v, want ErrNoLeader", err)
	}
	var noLeader *NoLeaderError
	if !errors.As(err, &noLeader) || noLeader.Attempts != 3 {
		t.Errorf("got %#v, want a *NoLeaderError after 3 attempts", err)
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("status.Code = %v, want the last status, Unavailable", status.Code(err))
	}
}

func TestLeaderCallReturnsOtherErrorsAsIs(t *testing.T) {
	ctx := testContext(t)
	lis, addr := listen(t)
	leader := &fakeNimbus{
		getLeader: leaderAt(t, addr),
		activate: func(*nimbusv1.ActivateTopologyRequest) error {
			return status.Error(codes.InvalidArgument, "nimbus: name: must match [A-Za-z0-9_.-]{1,128}")
		},
	}
	serve(t, lis, leader)

	c := newClient(t, []string{addr})
	err := c.ActivateTopology(ctx, "bad/name")
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	if n := leader.count("ActivateTopology"); n != 1 {
		t.Errorf("%d attempts, want 1: InvalidArgument is not retried", n)
	}
}

func TestReadSkipsClosedSeed(t *testing.T) {
	ctx := testContext(t)
	good := &fakeNimbus{getClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		return &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
			Nimbuses: []*nimbusv1.NimbusSummary{{Host: "nimbus-2", Port: 6627}},
		}}, nil
	}}
	c := newClient(t, []string{closedAddr(t), start(t, good)})
	resp, err := c.GetClusterInfo(ctx)
	if err != nil {
		t.Fatalf("GetClusterInfo: %v", err)
	}
	if got := resp.GetCluster().GetNimbuses()[0].GetHost(); got != "nimbus-2" {
		t.Errorf("got nimbus %q, want nimbus-2", got)
	}
}

func TestReadStartsAtLastAnswer(t *testing.T) {
	ctx := testContext(t)
	unavailable := &fakeNimbus{getClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		return nil, status.Error(codes.Unavailable, "nimbus: not ready")
	}}
	good := &fakeNimbus{getClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		return &nimbusv1.GetClusterInfoResponse{}, nil
	}}
	c := newClient(t, []string{start(t, unavailable), start(t, good)})
	for range 3 {
		if _, err := c.GetClusterInfo(ctx); err != nil {
			t.Fatalf("GetClusterInfo: %v", err)
		}
	}
	if n := unavailable.count("GetClusterInfo"); n != 1 {
		t.Errorf("the Unavailable seed got %d calls, want 1", n)
	}
}

func TestReadNoSeedAnswered(t *testing.T) {
	ctx := testContext(t)
	a, b := closedAddr(t), closedAddr(t)
	c := newClient(t, []string{a, b})
	_, err := c.GetLeader(ctx)
	if !errors.Is(err, ErrNoSeedAnswered) {
		t.Fatalf("got %v, want ErrNoSeedAnswered", err)
	}
	var none *NoSeedAnsweredError
	if !errors.As(err, &none) || len(none.Failures) != 2 || none.Failures[0].Addr != a || none.Failures[1].Addr != b {
		t.Fatalf("got %#v, want failures at %s and %s", err, a, b)
	}
	if want := "client: no nimbus answered at " + a + " (connection refused), " + b + " (connection refused)"; err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("status.Code = %v, want Unavailable", status.Code(err))
	}
	if ctx.Err() != nil {
		t.Error("the context expired: the client waited instead of failing fast")
	}
}

type submitServer = grpc.ClientStreamingServer[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]

// submission is what a fake leader received. The handler fills it under
// mu; the test reads it under mu after the RPC.
type submission struct {
	mu        sync.Mutex
	spec      *nimbusv1.TopologySpec
	chunkLens []int
	artifact  []byte
	trailer   []byte
}

// receive reads a whole submission into got and answers with topology id
// "<name>-1-1".
func receive(got *submission) func(submitServer) error {
	return func(stream submitServer) error {
		got.mu.Lock()
		defer got.mu.Unlock()
		for {
			msg, err := stream.Recv()
			if err != nil {
				return err
			}
			switch part := msg.GetPart().(type) {
			case *nimbusv1.SubmitTopologyRequest_Spec:
				got.spec = part.Spec
			case *nimbusv1.SubmitTopologyRequest_Chunk:
				got.chunkLens = append(got.chunkLens, len(part.Chunk))
				got.artifact = append(got.artifact, part.Chunk...)
			case *nimbusv1.SubmitTopologyRequest_Trailer:
				got.trailer = part.Trailer.GetSha256()
				if _, err := stream.Recv(); err != io.EOF {
					return status.Errorf(codes.InvalidArgument, "message after trailer: %v", err)
				}
				return stream.SendAndClose(&nimbusv1.SubmitTopologyResponse{
					TopologyId: got.spec.GetName() + "-1-1", ReplicationCount: 1,
				})
			}
		}
	}
}

func randomArtifact(t *testing.T, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func checkSubmission(t *testing.T, got *submission, artifact []byte) {
	t.Helper()
	got.mu.Lock()
	defer got.mu.Unlock()
	if got.spec.GetName() != "wordcount" {
		t.Errorf("spec name %q, want wordcount", got.spec.GetName())
	}
	for i, n := range got.chunkLens {
		if n == 0 || n > MaxChunkSize {
			t.Errorf("chunk %d has %d bytes, want 1..%d", i, n, MaxChunkSize)
		}
	}
	if !bytes.Equal(got.artifact, artifact) {
		t.Errorf("the leader received %d bytes that differ from the %d-byte artifact", len(got.artifact), len(artifact))
	}
	if want := sha256.Sum256(artifact); !bytes.Equal(got.trailer, want[:]) {
		t.Errorf("trailer SHA-256 %x, want %x", got.trailer, want)
	}
}

var spec = &nimbusv1.TopologySpec{Name: "wordcount", NumWorkers: 2}

func TestSubmitStreamsSpecChunksTrailer(t *testing.T) {
	ctx := testContext(t)
	got := &submission{}
	lis, addr := listen(t)
	serve(t, lis, &fakeNimbus{getLeader: leaderAt(t, addr), submit: receive(got)})
	artifact := randomArtifact(t, 2*MaxChunkSize+MaxChunkSize/2)

	var progress []int64
	c := newClient(t, []string{addr})
	resp, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)),
		func(sent, total int64) {
			if total != int64(len(artifact)) {
				t.Errorf("progress total %d, want %d", total, len(artifact))
			}
			progress = append(progress, sent)
		})
	if err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	if resp.GetTopologyId() != "wordcount-1-1" {
		t.Errorf("topology id %q, want wordcount-1-1", resp.GetTopologyId())
	}
	checkSubmission(t, got, artifact)
	got.mu.Lock()
	if len(got.chunkLens) != 3 {
		t.Errorf("chunks of %v bytes, want 3 chunks", got.chunkLens)
	}
	got.mu.Unlock()
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Errorf("progress %v is not increasing", progress)
		}
	}
	if len(progress) == 0 || progress[len(progress)-1] != int64(len(artifact)) {
		t.Errorf("progress %v does not end at %d", progress, len(artifact))
	}
}

func TestSubmitShortArtifactSendsNoTrailer(t *testing.T) {
	ctx := testContext(t)
	got := &submission{}
	lis, addr := listen(t)
	serve(t, lis, &fakeNimbus{getLeader: leaderAt(t, addr), submit: receive(got)})

	c := newClient(t, []string{addr})
	_, err := c.SubmitTopology(ctx, spec, bytes.NewReader(make([]byte, 10)), 20, nil)
	if err == nil {
		t.Fatal("SubmitTopology with a short artifact: want an error")
	}
	got.mu.Lock() // the handler holds it until the cancelled stream ends
	defer got.mu.Unlock()
	if got.trailer != nil {
		t.Error("the leader received a trailer for a short artifact")
	}
}

// notLeaderAfterFirstChunk is a follower that reads the spec and one chunk,
// so the client has read from the artifact, then redirects to leader.
func notLeaderAfterFirstChunk(t *testing.T, leader string) func(submitServer) error {
	return func(stream submitServer) error {
		for range 2 {
			if _, err := stream.Recv(); err != nil {
				return err
			}
		}
		return notLeaderErr(t, leader)
	}
}

func TestSubmitFollowsRedirectWithSeekableArtifact(t *testing.T) {
	ctx := testContext(t)
	got := &submission{}
	leaderAddr := start(t, &fakeNimbus{submit: receive(got)})
	lis, followerAddr := listen(t)
	serve(t, lis, &fakeNimbus{
		getLeader: leaderAt(t, followerAddr), // stale
		submit:    notLeaderAfterFirstChunk(t, leaderAddr),
	})
	artifact := randomArtifact(t, 2*MaxChunkSize)

	c := newClient(t, []string{followerAddr})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, got, artifact)
}

func TestSubmitDoesNotReplayUnseekableArtifact(t *testing.T) {
	ctx := testContext(t)
	leader := &fakeNimbus{submit: receive(&submission{})}
	leaderAddr := start(t, leader)
	lis, followerAddr := listen(t)
	serve(t, lis, &fakeNimbus{
		getLeader: leaderAt(t, followerAddr),
		submit:    notLeaderAfterFirstChunk(t, leaderAddr),
	})
	artifact := randomArtifact(t, 2*MaxChunkSize)

	c := newClient(t, []string{followerAddr})
	unseekable := struct{ io.Reader }{bytes.NewReader(artifact)}
	_, err := c.SubmitTopology(ctx, spec, unseekable, int64(len(artifact)), nil)
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("got %v, want the follower's FailedPrecondition", err)
	}
	if n := leader.count("SubmitTopology"); n != 0 {
		t.Errorf("the leader got %d submissions of a half-read artifact, want 0", n)
	}
}

func TestSubmitRetriesWhenTheStreamCannotOpen(t *testing.T) {
	ctx := testContext(t)
	got := &submission{}
	leaderAddr := start(t, &fakeNimbus{submit: receive(got)})
	// The seed first names a dead leader, then the live one: the stream
	// cannot open at the first, nothing was sent, so the client retries.
	deadLeader, liveLeader := leaderAt(t, closedAddr(t)), leaderAt(t, leaderAddr)
	seed := &fakeNimbus{}
	seed.getLeader = func() (*nimbusv1.GetLeaderResponse, error) {
		if seed.count("GetLeader") == 1 {
			return deadLeader()
		}
		return liveLeader()
	}
	artifact := randomArtifact(t, 100)

	c := newClient(t, []string{start(t, seed)})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, got, artifact)
}

func TestSubmitDoesNotRetryOnceTheStreamIsOpen(t *testing.T) {
	ctx := testContext(t)
	lis, addr := listen(t)
	// The leader reads everything, then fails: it may have committed.
	leader := &fakeNimbus{getLeader: leaderAt(t, addr), submit: func(stream submitServer) error {
		for {
			if _, err := stream.Recv(); err == io.EOF {
				return status.Error(codes.Unavailable, "nimbus: leadership lost")
			} else if err != nil {
				return err
			}
		}
	}}
	serve(t, lis, leader)

	c := newClient(t, []string{addr})
	_, err := c.SubmitTopology(ctx, spec, bytes.NewReader(make([]byte, 100)), 100, nil)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
	if n := leader.count("SubmitTopology"); n != 1 {
		t.Errorf("the leader got %d submissions, want 1: no retry", n)
	}
}

// answerFirstThen answers the first submission with err once it has read
// up to (and including) the part named by after ("spec" or "trailer"),
// and receives the next ones into got.
func answerFirstThen(leader *fakeNimbus, after string, err error, got *submission) func(submitServer) error {
	return func(stream submitServer) error {
		if leader.count("SubmitTopology") > 1 {
			return receive(got)(stream)
		}
		for {
			msg, rerr := stream.Recv()
			if rerr != nil {
				return rerr
			}
			_, isSpec := msg.GetPart().(*nimbusv1.SubmitTopologyRequest_Spec)
			_, isTrailer := msg.GetPart().(*nimbusv1.SubmitTopologyRequest_Trailer)
			if (after == "spec" && isSpec) || (after == "trailer" && isTrailer) {
				return err
			}
		}
	}
}

func TestSubmitResubmitsWhenAbortedEarly(t *testing.T) {
	ctx := testContext(t)
	lis, addr := listen(t)
	got := &submission{}
	leader := &fakeNimbus{getLeader: leaderAt(t, addr)}
	// The leader's term has not started when the spec arrives; the rest of
	// the upload may already be buffered, so only the server can say that
	// nothing was committed: ABORTED.
	leader.submit = answerFirstThen(leader, "spec", status.Error(codes.Aborted, "nimbus: submission not committed: no leader elected"), got)
	serve(t, lis, leader)
	artifact := randomArtifact(t, 3000)
	c := newClient(t, []string{addr})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, got, artifact)
}

func TestSubmitResubmitsWhenTheLeaderAbortedIt(t *testing.T) {
	ctx := testContext(t)
	lis, addr := listen(t)
	got := &submission{}
	leader := &fakeNimbus{getLeader: leaderAt(t, addr)}
	// Everything was sent, then leadership was lost before the commit.
	leader.submit = answerFirstThen(leader, "trailer", status.Error(codes.Aborted, "nimbus: submission not committed"), got)
	serve(t, lis, leader)
	artifact := randomArtifact(t, 3000)
	c := newClient(t, []string{addr})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, got, artifact)
	if n := leader.count("SubmitTopology"); n != 2 {
		t.Fatalf("%d submissions, want 2", n)
	}
}
