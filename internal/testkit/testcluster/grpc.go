package testcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// healthTimeout bounds one Health call.
const healthTimeout = 2 * time.Second

// Conn returns the Cluster's gRPC connection to addr, made on first use
// (it does not dial until a call) and closed at Close: plaintext, or in a
// Cluster WithSecurity over TLS as Security.Admin.
func (c *Cluster) Conn(addr string) *grpc.ClientConn {
	if c.Security != nil {
		return c.ConnAs(addr, c.Security.Admin)
	}
	return c.conn(addr, "", insecure.NewCredentials)
}

// Credentials are what a client of the Cluster's own (an SDK client, say)
// dials with: plaintext, or in a Cluster WithSecurity TLS as
// Security.Admin. They fail the test if the files cannot be loaded.
func (c *Cluster) Credentials(t testing.TB) credentials.TransportCredentials {
	if c.Security == nil {
		return insecure.NewCredentials()
	}
	creds, err := c.Security.Admin.Credentials()
	if err != nil {
		t.Fatalf("testcluster: the TLS material of %q: %v", c.Security.Admin.Principal, err)
	}
	return creds
}

// ClientFlags are stormctl's flags to reach the Cluster as its own clients
// do: none, or in a Cluster WithSecurity TLS as Security.Admin.
func (c *Cluster) ClientFlags() []string {
	if c.Security == nil {
		return nil
	}
	return c.Security.Admin.ClientFlags()
}

// ConnAs returns the Cluster's gRPC connection to addr over TLS as id (a
// Security's Client, Foreign or Anonymous), made on first use and closed
// at Close, as Conn does. It panics if id's files cannot be loaded, a bug
// in the test.
func (c *Cluster) ConnAs(addr string, id Identity) *grpc.ClientConn {
	return c.conn(addr, "tls|"+id.Cert+"|"+id.Truststore, func() credentials.TransportCredentials {
		creds, err := id.Credentials()
		if err != nil {
			panic(fmt.Sprintf("testcluster: the TLS material of %q: %v", id.Principal, err))
		}
		return creds
	})
}

// conn is the connection to addr kept under key, made with creds.
func (c *Cluster) conn(addr, key string, creds func() credentials.TransportCredentials) *grpc.ClientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	key = addr + "|" + key
	if cc, ok := c.conns[key]; ok {
		return cc
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds()))
	if err != nil {
		panic(err) // only for a malformed address: a bug in the test
	}
	c.conns[key] = cc
	return cc
}

// API is the NimbusService of one process, called directly (no SDK, no
// redirects), over Conn.
func (c *Cluster) API(p *Process) nimbusv1.NimbusServiceClient {
	return nimbusv1.NewNimbusServiceClient(c.Conn(p.Addr()))
}

// APIAs is API called as id (ConnAs).
func (c *Cluster) APIAs(p *Process, id Identity) nimbusv1.NimbusServiceClient {
	return nimbusv1.NewNimbusServiceClient(c.ConnAs(p.Addr(), id))
}

// CodeAs is the CodeService of one process, called as id (ConnAs).
func (c *Cluster) CodeAs(p *Process, id Identity) nimbusv1.CodeServiceClient {
	return nimbusv1.NewCodeServiceClient(c.ConnAs(p.Addr(), id))
}

// Health asks one process for the status of service ("" for the process,
// nimbusv1.LeaderHealthService for its leadership), waiting up to 2 s.
func (c *Cluster) Health(p *Process, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	return health(c.Conn(p.Addr()), service)
}

// HealthAs is Health asked as id (ConnAs).
func (c *Cluster) HealthAs(p *Process, id Identity, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	return health(c.ConnAs(p.Addr(), id), service)
}

func health(cc *grpc.ClientConn, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}
