package client

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Each way a client and a port can disagree, against real servers on
// loopback: the error names what is probably wrong and the key that fixes
// it, wraps gRPC's or crypto/tls's own error, and ends a leader call at
// once rather than after its retry budget.
func TestPortMismatch(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	ca, err := certs.NewCA(dir+"/ca", "Test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := ca.Issue(dir+"/nimbus", "nimbus", certs.CertOptions{Server: true, Hosts: []string{"127.0.0.1"}, Lifetime: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := certs.Load(issued.Files, quiet)
	if err != nil {
		t.Fatal(err)
	}
	trusting, err := certs.Load(certs.Files{Truststore: ca.CertFile}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	tlsClient := WithTransportCredentials(trusting.ClientCredentials())

	tlsNimbus := startNimbus(t, grpc.Creds(serving.ServerCredentials(false)))
	plainNimbus := startNimbus(t)
	plainHTTP := serveHTTP(t, nil)
	tlsHTTP := serveHTTP(t, serving.ServerConfig(false)) // as the UI and metrics ports serve

	for _, tc := range []struct {
		name string
		addr string
		opts []Option
		want error
	}{
		{"plaintext client, TLS nimbus", tlsNimbus, nil, ErrServerWantsTLS},
		{"TLS client, plaintext nimbus", plainNimbus, []Option{tlsClient}, ErrServerPlaintext},
		{"plaintext client, HTTP port", plainHTTP, nil, ErrNotGRPCPort},
		{"TLS client, HTTP port", plainHTTP, []Option{tlsClient}, ErrNotGRPCPort},
		{"TLS client, HTTPS port", tlsHTTP, []Option{tlsClient}, ErrNotGRPCPort},
		{"plaintext client, HTTPS port", tlsHTTP, nil, ErrServerWantsTLS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New([]string{tc.addr}, append(tc.opts, WithRetry(0, 30*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			_, err = c.GetLeader(t.Context())
			var pm *PortMismatchError
			if !errors.Is(err, tc.want) || !errors.As(err, &pm) || pm.Err == nil {
				t.Fatalf("GetLeader: %v\nwant a PortMismatchError with reason %q", err, tc.want)
			}
			if !errors.Is(err, ErrNoSeedAnswered) || status.Code(err) != codes.Unavailable {
				t.Errorf("GetLeader: %v: want ErrNoSeedAnswered and UNAVAILABLE still", err)
			}

			t.Log(err)

			began := time.Now()
			err = c.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "wc"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("kill: %v\nwant reason %q", err, tc.want)
			}
			if elapsed := time.Since(began); elapsed > 10*time.Second {
				t.Errorf("kill took %v: a port that cannot answer was retried", elapsed)
			}
		})
	}

	// The agreeing pairs still work: nothing above is a false alarm.
	for name, pair := range map[string]struct {
		addr string
		opts []Option
	}{"plaintext": {plainNimbus, nil}, "TLS": {tlsNimbus, []Option{tlsClient}}} {
		c, err := New([]string{pair.addr}, pair.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetLeader(t.Context()); err != nil {
			t.Errorf("%s client, %s nimbus: %v", name, name, err)
		}
		c.Close()
	}
}

// startNimbus serves a fake nimbus that names itself leader.
func startNimbus(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	f := &fakenimbus.Server{}
	lis, addr := fakenimbus.Listen(t)
	f.OnGetLeader = fakenimbus.LeaderAt(addr)
	f.OnKill = func(*nimbusv1.KillTopologyRequest) error { return nil }
	f.Serve(t, lis, opts...)
	return addr
}

// serveHTTP serves 404s over HTTP/1 (over TLS with cfg) until the test
// ends, as a metrics or UI port would.
func serveHTTP(t *testing.T, cfg *tls.Config) string {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelDebug)
	addr := srv.Listener.Addr().String()
	if cfg != nil {
		srv.Listener = tls.NewListener(srv.Listener, cfg) // the daemons' TLS, not httptest's certificate
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return addr
}
