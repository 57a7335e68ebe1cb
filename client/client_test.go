package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

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
		"host:":      `client: seed "host:": port "" is not in 1-65535`,
		"a:b:c":      `client: seed "a:b:c": want host[:port]`,
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

func TestNewGivesSeedsWithoutAPortTheDefault(t *testing.T) {
	for seed, want := range map[string]string{
		"localhost":      "localhost:6627",
		"nimbus-1":       "nimbus-1:6627",
		"10.0.0.1":       "10.0.0.1:6627",
		"::1":            "[::1]:6627",
		"[::1]":          "[::1]:6627",
		"nimbus-1:16627": "nimbus-1:16627",
		"[::1]:16627":    "[::1]:16627",
	} {
		c, err := New([]string{seed})
		if err != nil {
			t.Errorf("New with seed %q: %v", seed, err)
			continue
		}
		if got := c.addrs; len(got) != 1 || got[0] != want {
			t.Errorf("New with seed %q: addresses %q, want %q", seed, got, want)
		}
		c.Close()
	}
	// The same nimbus with and without its port is one address.
	c, err := New([]string{"nimbus-1", "nimbus-1:6627"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.addrs) != 1 {
		t.Errorf("addresses %q, want one", c.addrs)
	}
}

func TestLeaderCallFollowsRedirect(t *testing.T) {
	ctx := testContext(t)
	var activated atomic.Value
	leader := &fakenimbus.Server{OnActivate: func(req *nimbusv1.ActivateTopologyRequest) error {
		activated.Store(req.GetName())
		return nil
	}}
	leaderAddr := leader.Start(t)
	lis, followerAddr := fakenimbus.Listen(t)
	follower := &fakenimbus.Server{
		OnActivate: func(*nimbusv1.ActivateTopologyRequest) error { return fakenimbus.NotLeader(leaderAddr) },
		// A stale view: the follower still believes it leads.
		OnGetLeader: fakenimbus.LeaderAt(followerAddr),
	}
	follower.Serve(t, lis)

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
	if n := follower.Calls("ActivateTopology"); n != 1 {
		t.Errorf("follower got %d ActivateTopology calls, want 1", n)
	}
	if n := leader.Calls("ActivateTopology"); n != 2 {
		t.Errorf("leader got %d ActivateTopology calls, want 2", n)
	}
}

func TestLeaderCallStopsRedirectLoop(t *testing.T) {
	ctx := testContext(t)
	aLis, aAddr := fakenimbus.Listen(t)
	bLis, bAddr := fakenimbus.Listen(t)
	a := &fakenimbus.Server{
		OnGetLeader: fakenimbus.LeaderAt(aAddr),
		OnActivate:  func(*nimbusv1.ActivateTopologyRequest) error { return fakenimbus.NotLeader(bAddr) },
	}
	b := &fakenimbus.Server{OnActivate: func(*nimbusv1.ActivateTopologyRequest) error { return fakenimbus.NotLeader(aAddr) }}
	a.Serve(t, aLis)
	b.Serve(t, bLis)

	c := newClient(t, []string{aAddr})
	err := c.ActivateTopology(ctx, "wordcount")
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("got %v, want FailedPrecondition after the redirect limit", err)
	}
	if n := a.Calls("ActivateTopology") + b.Calls("ActivateTopology"); n != DefaultMaxRedirects+1 {
		t.Errorf("%d calls, want %d", n, DefaultMaxRedirects+1)
	}
}

func TestLeaderCallRetriesUnavailable(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr)}
	leader.OnActivate = func(*nimbusv1.ActivateTopologyRequest) error {
		if leader.Calls("ActivateTopology") <= 2 {
			return status.Error(codes.Unavailable, "nimbus: no leader elected")
		}
		return nil
	}
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	if err := c.ActivateTopology(ctx, "wordcount"); err != nil {
		t.Fatalf("ActivateTopology: %v", err)
	}
	if n := leader.Calls("ActivateTopology"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestLeaderCallSpendsBudget(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{
		OnGetLeader: fakenimbus.LeaderAt(addr),
		OnActivate: func(*nimbusv1.ActivateTopologyRequest) error {
			return status.Error(codes.Unavailable, "nimbus: not ready")
		},
	}
	leader.Serve(t, lis)

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
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{
		OnGetLeader: fakenimbus.LeaderAt(addr),
		OnActivate: func(*nimbusv1.ActivateTopologyRequest) error {
			return status.Error(codes.InvalidArgument, "nimbus: name: must match [A-Za-z0-9_.-]{1,128}")
		},
	}
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	err := c.ActivateTopology(ctx, "bad/name")
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	if n := leader.Calls("ActivateTopology"); n != 1 {
		t.Errorf("%d attempts, want 1: InvalidArgument is not retried", n)
	}
}

func TestReadSkipsClosedSeed(t *testing.T) {
	ctx := testContext(t)
	good := &fakenimbus.Server{OnGetClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		return &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
			Nimbuses: []*nimbusv1.NimbusSummary{{Host: "nimbus-2", Port: 6627}},
		}}, nil
	}}
	c := newClient(t, []string{testcluster.ClosedAddr(t), good.Start(t)})
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
	unavailable := &fakenimbus.Server{OnGetClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		return nil, status.Error(codes.Unavailable, "nimbus: not ready")
	}}
	good := &fakenimbus.Server{OnGetClusterInfo: func() (*nimbusv1.GetClusterInfoResponse, error) {
		return &nimbusv1.GetClusterInfoResponse{}, nil
	}}
	c := newClient(t, []string{unavailable.Start(t), good.Start(t)})
	for range 3 {
		if _, err := c.GetClusterInfo(ctx); err != nil {
			t.Fatalf("GetClusterInfo: %v", err)
		}
	}
	if n := unavailable.Calls("GetClusterInfo"); n != 1 {
		t.Errorf("the Unavailable seed got %d calls, want 1", n)
	}
}

func TestReadNoSeedAnswered(t *testing.T) {
	ctx := testContext(t)
	closed := testcluster.ClosedAddrs(t, 2)
	a, b := closed[0], closed[1]
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

func randomArtifact(t *testing.T, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// submitted is a fake leader's answer to a submission it received whole.
var submitted = &nimbusv1.SubmitTopologyResponse{TopologyId: "wordcount-1-1", ReplicationCount: 1}

// receiving returns a fake leader that receives submissions whole and
// answers submitted; with addr, it names itself leader at addr.
func receiving(addr string) *fakenimbus.Server {
	f := &fakenimbus.Server{}
	if addr != "" {
		f.OnGetLeader = fakenimbus.LeaderAt(addr)
	}
	f.OnSubmit = f.Receive(submitted)
	return f
}

// checkSubmission fails unless got is a submission of spec with artifact
// in chunks of at most MaxChunkSize, and its SHA-256.
func checkSubmission(t *testing.T, got fakenimbus.Submission, artifact []byte) {
	t.Helper()
	if got.Spec.GetName() != "wordcount" {
		t.Errorf("spec name %q, want wordcount", got.Spec.GetName())
	}
	for i, n := range got.ChunkLens {
		if n == 0 || n > MaxChunkSize {
			t.Errorf("chunk %d has %d bytes, want 1..%d", i, n, MaxChunkSize)
		}
	}
	if !bytes.Equal(got.Artifact, artifact) {
		t.Errorf("the leader received %d bytes that differ from the %d-byte artifact", len(got.Artifact), len(artifact))
	}
	if want := sha256.Sum256(artifact); !bytes.Equal(got.Trailer, want[:]) {
		t.Errorf("trailer SHA-256 %x, want %x", got.Trailer, want)
	}
}

var spec = &nimbusv1.TopologySpec{Name: "wordcount", NumWorkers: 2}

func TestSubmitStreamsSpecChunksTrailer(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	leader := receiving(addr)
	leader.Serve(t, lis)
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
	got := leader.LastSubmission()
	checkSubmission(t, got, artifact)
	if len(got.ChunkLens) != 3 {
		t.Errorf("chunks of %v bytes, want 3 chunks", got.ChunkLens)
	}
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
	lis, addr := fakenimbus.Listen(t)
	leader := receiving(addr)
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	_, err := c.SubmitTopology(ctx, spec, bytes.NewReader(make([]byte, 10)), 20, nil)
	if err == nil {
		t.Fatal("SubmitTopology with a short artifact: want an error")
	}
	// LastSubmission waits for the handler, which returns once the
	// cancelled stream ends.
	if leader.LastSubmission().Trailer != nil {
		t.Error("the leader received a trailer for a short artifact")
	}
}

func TestSubmitFollowsRedirectWithSeekableArtifact(t *testing.T) {
	ctx := testContext(t)
	leader := receiving("")
	leaderAddr := leader.Start(t)
	lis, followerAddr := fakenimbus.Listen(t)
	follower := &fakenimbus.Server{
		OnGetLeader: fakenimbus.LeaderAt(followerAddr), // stale
		OnSubmit:    fakenimbus.NotLeaderAfterFirstChunk(leaderAddr),
	}
	follower.Serve(t, lis)
	artifact := randomArtifact(t, 2*MaxChunkSize)

	c := newClient(t, []string{followerAddr})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, leader.LastSubmission(), artifact)
}

func TestSubmitDoesNotReplayUnseekableArtifact(t *testing.T) {
	ctx := testContext(t)
	leader := receiving("")
	leaderAddr := leader.Start(t)
	lis, followerAddr := fakenimbus.Listen(t)
	follower := &fakenimbus.Server{
		OnGetLeader: fakenimbus.LeaderAt(followerAddr),
		OnSubmit:    fakenimbus.NotLeaderAfterFirstChunk(leaderAddr),
	}
	follower.Serve(t, lis)
	artifact := randomArtifact(t, 2*MaxChunkSize)

	c := newClient(t, []string{followerAddr})
	unseekable := struct{ io.Reader }{bytes.NewReader(artifact)}
	_, err := c.SubmitTopology(ctx, spec, unseekable, int64(len(artifact)), nil)
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("got %v, want the follower's FailedPrecondition", err)
	}
	if n := leader.Calls("SubmitTopology"); n != 0 {
		t.Errorf("the leader got %d submissions of a half-read artifact, want 0", n)
	}
}

func TestSubmitRetriesWhenTheStreamCannotOpen(t *testing.T) {
	ctx := testContext(t)
	leader := receiving("")
	leaderAddr := leader.Start(t)
	// The seed first names a dead leader, then the live one: the stream
	// cannot open at the first, nothing was sent, so the client retries.
	deadLeader, liveLeader := fakenimbus.LeaderAt(testcluster.ClosedAddr(t)), fakenimbus.LeaderAt(leaderAddr)
	seed := &fakenimbus.Server{}
	seed.OnGetLeader = func() (*nimbusv1.GetLeaderResponse, error) {
		if seed.Calls("GetLeader") == 1 {
			return deadLeader()
		}
		return liveLeader()
	}
	artifact := randomArtifact(t, 100)

	c := newClient(t, []string{seed.Start(t)})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, leader.LastSubmission(), artifact)
}

func TestSubmitDoesNotRetryOnceTheStreamIsOpen(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	// The leader reads everything, then fails: it may have committed.
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr), OnSubmit: func(stream fakenimbus.SubmitStream) error {
		for {
			if _, err := stream.Recv(); err == io.EOF {
				return status.Error(codes.Unavailable, "nimbus: leadership lost")
			} else if err != nil {
				return err
			}
		}
	}}
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	_, err := c.SubmitTopology(ctx, spec, bytes.NewReader(make([]byte, 100)), 100, nil)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
	if n := leader.Calls("SubmitTopology"); n != 1 {
		t.Errorf("the leader got %d submissions, want 1: no retry", n)
	}
}

// answerFirstThen answers the first submission with err once it has read
// up to (and including) the part named by after ("spec" or "trailer"),
// and receives the next ones whole, answering submitted.
func answerFirstThen(leader *fakenimbus.Server, after string, err error) func(fakenimbus.SubmitStream) error {
	receive := leader.Receive(submitted)
	return func(stream fakenimbus.SubmitStream) error {
		if leader.Calls("SubmitTopology") > 1 {
			return receive(stream)
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
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr)}
	// The leader's term has not started when the spec arrives; the rest of
	// the upload may already be buffered, so only the server can say that
	// nothing was committed: ABORTED.
	leader.OnSubmit = answerFirstThen(leader, "spec", status.Error(codes.Aborted, "nimbus: submission not committed: no leader elected"))
	leader.Serve(t, lis)
	artifact := randomArtifact(t, 3000)
	c := newClient(t, []string{addr})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, leader.LastSubmission(), artifact)
}

func TestSubmitResubmitsWhenTheLeaderAbortedIt(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr)}
	// Everything was sent, then leadership was lost before the commit.
	leader.OnSubmit = answerFirstThen(leader, "trailer", status.Error(codes.Aborted, "nimbus: submission not committed"))
	leader.Serve(t, lis)
	artifact := randomArtifact(t, 3000)
	c := newClient(t, []string{addr})
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	checkSubmission(t, leader.LastSubmission(), artifact)
	if n := leader.Calls("SubmitTopology"); n != 2 {
		t.Fatalf("%d submissions, want 2", n)
	}
}

// The SDK's default port is nimbus.grpc.port's default.
func TestDefaultPortIsTheNimbusDefault(t *testing.T) {
	if DefaultPort != configs.DefaultNimbusGRPCPort {
		t.Errorf("client.DefaultPort %d, configs.DefaultNimbusGRPCPort %d", DefaultPort, configs.DefaultNimbusGRPCPort)
	}
}
