package client

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The calls on one topology, by name, as stormctl uses them.

func TestKillTopologySendsWaitAsGiven(t *testing.T) {
	ctx := testContext(t)
	var mu sync.Mutex
	var got []*nimbusv1.KillTopologyRequest
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr), OnKill: func(req *nimbusv1.KillTopologyRequest) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req)
		return nil
	}}
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	zero := int32(0)
	want := []*nimbusv1.KillTopologyRequest{
		{Name: "wordcount"},                  // unset: the server's default
		{Name: "wordcount", WaitSecs: &zero}, // set to 0: remove at once
	}
	for _, req := range want {
		if err := c.KillTopology(ctx, req); err != nil {
			t.Fatalf("KillTopology(%v): %v", req, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range want {
		if !proto.Equal(got[i], want[i]) { // compares wait_secs' presence too
			t.Errorf("request %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestLeaderCallsReturnNotFoundAtOnce(t *testing.T) {
	ctx := testContext(t)
	notFound := status.Error(codes.NotFound, "nimbus: topology not found")
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{
		OnGetLeader:  fakenimbus.LeaderAt(addr),
		OnKill:       func(*nimbusv1.KillTopologyRequest) error { return notFound },
		OnActivate:   func(*nimbusv1.ActivateTopologyRequest) error { return notFound },
		OnDeactivate: func(*nimbusv1.DeactivateTopologyRequest) error { return notFound },
		OnRebalance:  func(*nimbusv1.RebalanceTopologyRequest) error { return notFound },
	}
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	for rpc, call := range map[string]func() error{
		"KillTopology":       func() error { return c.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "nosuch"}) },
		"ActivateTopology":   func() error { return c.ActivateTopology(ctx, "nosuch") },
		"DeactivateTopology": func() error { return c.DeactivateTopology(ctx, "nosuch") },
		"RebalanceTopology":  func() error { return c.RebalanceTopology(ctx, &nimbusv1.RebalanceTopologyRequest{Name: "nosuch"}) },
	} {
		if err := call(); status.Code(err) != codes.NotFound {
			t.Errorf("%s: got %v, want NotFound", rpc, err)
		}
		if n := leader.Calls(rpc); n != 1 {
			t.Errorf("%s: %d attempts, want 1", rpc, n)
		}
	}
}

func TestRebalanceUnimplementedIsNotRetried(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr)} // no OnRebalance: Unimplemented
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	workers := int32(3)
	err := c.RebalanceTopology(ctx, &nimbusv1.RebalanceTopologyRequest{Name: "wordcount", NumWorkers: &workers})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("got %v, want Unimplemented", err)
	}
	if n := leader.Calls("RebalanceTopology"); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestDeactivateRetriesUntilALeaderAnswers(t *testing.T) {
	ctx := testContext(t)
	lis, addr := fakenimbus.Listen(t)
	leader := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr)}
	leader.OnDeactivate = func(*nimbusv1.DeactivateTopologyRequest) error {
		if leader.Calls("DeactivateTopology") == 1 {
			return status.Error(codes.Unavailable, "nimbus: no leader elected")
		}
		return nil
	}
	leader.Serve(t, lis)

	c := newClient(t, []string{addr})
	if err := c.DeactivateTopology(ctx, "wordcount"); err != nil {
		t.Fatalf("DeactivateTopology: %v", err)
	}
	if n := leader.Calls("DeactivateTopology"); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

func TestGetTopologyInfoNotFoundIsTheAnswer(t *testing.T) {
	ctx := testContext(t)
	info := &nimbusv1.GetTopologyInfoResponse{Topology: &nimbusv1.TopologySummary{Name: "wordcount", Id: "wordcount-1-1"}}
	first := &fakenimbus.Server{OnGetTopologyInfo: func(req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
		if req.GetName() != "wordcount" {
			return nil, status.Error(codes.NotFound, "nimbus: topology not found")
		}
		return info, nil
	}}
	second := &fakenimbus.Server{OnGetTopologyInfo: first.OnGetTopologyInfo}
	c := newClient(t, []string{first.Start(t), second.Start(t)})

	got, err := c.GetTopologyInfo(ctx, "wordcount")
	if err != nil || !proto.Equal(got, info) {
		t.Fatalf("GetTopologyInfo: %v, %v; want %v", got, err, info)
	}
	if _, err := c.GetTopologyInfo(ctx, "nosuch"); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown name: got %v, want NotFound", err)
	}
	if n := second.Calls("GetTopologyInfo"); n != 0 {
		t.Errorf("the second seed got %d calls: NotFound is an answer, not a reason to ask another nimbus", n)
	}
}

// The leader answers a submission only once the code is replicated, which
// may take minutes: the per-attempt call timeout must not bound it.
func TestSubmitIsNotBoundByTheCallTimeout(t *testing.T) {
	ctx := testContext(t) // 10 s
	var deadline time.Time
	var hasDeadline bool
	lis, addr := fakenimbus.Listen(t)
	leader := receiving(addr)
	recv := leader.OnSubmit
	leader.OnSubmit = func(stream fakenimbus.SubmitStream) error {
		deadline, hasDeadline = stream.Context().Deadline()
		return recv(stream)
	}
	leader.Serve(t, lis)

	const callTimeout = 500 * time.Millisecond
	c := newClient(t, []string{addr}, WithCallTimeout(callTimeout))
	artifact := randomArtifact(t, 100)
	if _, err := c.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("SubmitTopology: %v", err)
	}
	// LastSubmission waits for the handler: its writes come before these
	// reads.
	checkSubmission(t, leader.LastSubmission(), artifact)
	ctxDeadline, _ := ctx.Deadline()
	if !hasDeadline || ctxDeadline.Sub(deadline) > time.Second {
		t.Errorf("the submission's deadline was %v (set %t), want the caller's, %v", deadline, hasDeadline, ctxDeadline)
	}
}
