// Package grpctest serves gRPC servers for tests: the one place that starts
// a test's server and stops it, and waits for it, when the test ends.
package grpctest

import (
	"net"
	"testing"

	"google.golang.org/grpc"
)

// Serve serves srv on lis until the test ends, then stops srv and waits
// for its Serve to return, so no server goroutine outlives the test.
func Serve(t testing.TB, srv *grpc.Server, lis net.Listener) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis) // returns when Stop closes lis
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
}
