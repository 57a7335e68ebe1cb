package testcluster

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// healthTimeout bounds one Health call.
const healthTimeout = 2 * time.Second

// Conn returns the Cluster's gRPC connection to addr, made on first use
// (it does not dial until a call) and closed at Close.
func (c *Cluster) Conn(addr string) *grpc.ClientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	if cc, ok := c.conns[addr]; ok {
		return cc
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err) // only for a malformed address: a bug in the test
	}
	c.conns[addr] = cc
	return cc
}

// API is the NimbusService of one process, called directly (no SDK, no
// redirects).
func (c *Cluster) API(p *Process) nimbusv1.NimbusServiceClient {
	return nimbusv1.NewNimbusServiceClient(c.Conn(p.Addr()))
}

// Health asks one process for the status of service ("" for the process,
// nimbusv1.LeaderHealthService for its leadership), waiting up to 2 s.
func (c *Cluster) Health(p *Process, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(c.Conn(p.Addr())).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}
