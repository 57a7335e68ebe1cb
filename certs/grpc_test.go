package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/grpctest"
)

// healthServer is a gRPC server with the health service on loopback, which
// remembers the client certificate of the last call.
type healthServer struct {
	addr string
	mu   sync.Mutex
	last tls.ConnectionState
}

func serveHealth(t *testing.T, creds credentials.TransportCredentials) *healthServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &healthServer{addr: lis.Addr().String()}
	srv := grpc.NewServer(grpc.Creds(creds), grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			if p, ok := grpcpeer.FromContext(ctx); ok {
				if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
					hs.mu.Lock()
					hs.last = info.State
					hs.mu.Unlock()
				}
			}
			return next(ctx, req)
		}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	grpctest.Serve(t, srv, lis)
	return hs
}

// lastClient is the certificate the last caller presented.
func (hs *healthServer) lastClient() tls.ConnectionState {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.last
}

// check calls Check on a new connection to addr and returns the server's
// certificate.
func check(addr string, creds credentials.TransportCredentials) (*x509.Certificate, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var p grpcpeer.Peer
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return nil, status.Errorf(codes.Internal, "status %v", resp.GetStatus())
	}
	info, _ := p.AuthInfo.(credentials.TLSInfo)
	return leafOf(info.State), nil
}

func TestGRPCMutualTLS(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	client := mustLoad(t, issue(t, ca, "alice", clientOpts()).Files, slog.New(slog.DiscardHandler))
	hs := serveHealth(t, server.ServerCredentials(true))
	_, port, _ := net.SplitHostPort(hs.addr)

	for _, host := range loopback {
		got, err := check(net.JoinHostPort(host, port), client.ClientCredentials())
		if err != nil {
			t.Fatalf("Check at %s: %v", host, err)
		}
		if got.Subject.CommonName != "nimbus-1" {
			t.Errorf("server's certificate %s, want CN=nimbus-1", got.Subject)
		}
		cs := hs.lastClient()
		if c := leafOf(cs); c == nil || c.Subject.CommonName != "alice" {
			t.Errorf("server saw client certificate %v, want CN=alice", c)
		}
		// The identity auth reads: the verified chain's leaf.
		if p, err := auth.PrincipalOfConn(&cs, configs.PrincipalCN); err != nil || p != "alice" {
			t.Errorf("auth.PrincipalOfConn = %q, %v; want alice", p, err)
		}
	}
}

func TestGRPCRefusals(t *testing.T) {
	ca := newCA(t, "Test CA")
	otherCA := newCA(t, "Other CA")
	logger, logs := newLogger()
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, logger)
	hs := serveHealth(t, server.ServerCredentials(true))
	quiet := slog.New(slog.DiscardHandler)

	// A client of another CA that trusts ours, and one with an expired
	// certificate, which Load would refuse: crypto/tls's own client.
	mallory := issue(t, otherCA, "mallory", clientOpts()).Files
	mallory.Truststore = ca.CertFile
	old := issue(t, ca, "old", expired())
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	oldCreds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{keyPair(t, old)}, RootCAs: pool})

	// A server of another CA, for a client of ours.
	foreign := serveHealth(t, mustLoad(t, issue(t, otherCA, "nimbus-x", serverOpts()).Files, quiet).ServerCredentials(true))

	// A client without a certificate is not refused by TLS: it has no
	// identity, and package auth answers its calls UNAUTHENTICATED, saying
	// why (this health server has no auth, so it answers).
	if _, err := check(hs.addr, mustLoad(t, Files{Truststore: ca.CertFile}, quiet).ClientCredentials()); err != nil {
		t.Errorf("a client without a certificate was refused by TLS: %v", err)
	}

	for _, tc := range []struct {
		name      string
		addr      string
		creds     credentials.TransportCredentials
		clientErr string // in the client's error
		serverLog string // in the server's log
	}{
		{"client of another CA", hs.addr, mustLoad(t, mallory, quiet).ClientCredentials(), "",
			"the client's certificate (CN=mallory, issued by CN=Other CA) is not signed by a CA in " + ca.CertFile},
		{"expired client certificate", hs.addr, oldCreds, "",
			"the client's certificate (CN=old) expired on " + date(old.Leaf.NotAfter)},
		{"server of another CA", foreign.addr, mustLoad(t, issue(t, ca, "bob", clientOpts()).Files, quiet).ClientCredentials(),
			"the server's certificate (CN=nimbus-x, issued by CN=Other CA) is not signed by a CA in " + ca.CertFile, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.addr, tc.creds)
			// A client refused by the server hears only TLS's alert ("bad
			// certificate"); the reason is in the server's log.
			if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), tc.clientErr) {
				t.Errorf("error %v, want Unavailable saying %q", err, tc.clientErr)
			}
			if tc.serverLog != "" && len(logs.waitLines(5*time.Second, `msg="refused a TLS client"`, "remote=127.0.0.1:", tc.serverLog)) == 0 {
				t.Errorf("the server logged no refusal saying %q:\n%s", tc.serverLog, logs)
			}
		})
	}
}
