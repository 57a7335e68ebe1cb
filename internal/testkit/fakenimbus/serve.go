package fakenimbus

import (
	"net"
	"strconv"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/internal/testkit/grpctest"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Listen opens 127.0.0.1:0 and returns the listener and its address, so a
// test learns a fake's address before setting the answers that name it,
// then serves (Serve). It fails the test if it cannot listen.
func Listen(t testing.TB) (net.Listener, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis, lis.Addr().String()
}

// Serve serves s on lis in the background until the test ends, with the
// gRPC server's opts (TLS credentials, say); the cleanup stops the server
// and waits for it. Set the On funcs first: Serve orders them before every
// RPC.
func (s *Server) Serve(t testing.TB, lis net.Listener, opts ...grpc.ServerOption) {
	t.Helper()
	srv := grpc.NewServer(opts...)
	nimbusv1.RegisterNimbusServiceServer(srv, s)
	grpctest.Serve(t, srv, lis)
}

// Start serves s on 127.0.0.1:0 until the test ends and returns its
// address.
func (s *Server) Start(t testing.TB) string {
	t.Helper()
	lis, addr := Listen(t)
	s.Serve(t, lis)
	return addr
}

// LeaderAt is an OnGetLeader that names the nimbus at addr ("host:port")
// as leader. It panics if addr has no port: a bug in the test.
func LeaderAt(addr string) func() (*nimbusv1.GetLeaderResponse, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		panic(err)
	}
	return func() (*nimbusv1.GetLeaderResponse, error) {
		return &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: host, Port: int32(p), IsLeader: true}}, nil
	}
}

// NotLeader is a follower's answer naming the leader at addr, as the
// server's error mapping builds it.
func NotLeader(leader string) error {
	st, err := status.New(codes.FailedPrecondition, "nimbus: not the leader").WithDetails(&errdetails.ErrorInfo{
		Reason: nimbusv1.ReasonNotLeader, Domain: nimbusv1.ErrorDomain, Metadata: map[string]string{nimbusv1.MetadataLeaderKey: leader},
	})
	if err != nil {
		panic(err) // ErrorInfo always marshals
	}
	return st.Err()
}
