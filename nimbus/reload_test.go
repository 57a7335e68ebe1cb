package nimbus

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/logging"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A secure nimbus started from a file takes a new nimbus.admins from it
// without a restart: the new admin's next request is allowed and the
// removed one's refused. A change to nimbus.grpc.port is reported as
// needing a restart and changes nothing; a file made invalid keeps the
// last good configuration and says why.
func TestReloadAdminsWithoutRestart(t *testing.T) {
	f := startFromFile(t, "nimbus.grpc.port: 0\nnimbus.admins: [alice]\n")
	s, logs, path, common, write, issue := f.s, f.logs, f.path, f.common, f.write, f.issue
	alice, bob := callerAs(t, s, issue("alice", false)), callerAs(t, s, issue("bob", false))
	mayRead := func(api nimbusv1.NimbusServiceClient) error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := api.GetNimbusConfig(ctx, &nimbusv1.GetNimbusConfigRequest{})
		return err
	}
	refused := func(who string, api nimbusv1.NimbusServiceClient) {
		t.Helper()
		if err := mayRead(api); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("%s: %v, want PermissionDenied", who, err)
		}
	}
	if err := mayRead(alice); err != nil {
		t.Fatalf("alice, an admin: %v", err)
	}
	refused("bob before the change", bob)

	write("nimbus.grpc.port: 0\nnimbus.admins: [bob]\n")
	testcluster.WaitFor(t, 10*time.Second, "bob allowed after the file names him", func() error { return mayRead(bob) })
	refused("alice after the change", alice)
	waitLog(t, logs, `"action":"reload-config"`, `"target":"nimbus.admins"`, `"nimbus.admins":{"old":"alice","new":"bob"}`)

	write("nimbus.grpc.port: 1\nnimbus.admins: [bob]\n")
	waitLog(t, logs, `"level":"WARN"`, "need a restart", `"keys":["nimbus.grpc.port"]`)
	if got := s.Reloader().Current().NimbusGRPCPort; got != 0 {
		t.Errorf("nimbus.grpc.port in force is %d, want 0: a change needing a restart was applied", got)
	}
	if err := mayRead(bob); err != nil {
		t.Errorf("bob after a change needing a restart: %v", err)
	}

	write("nimbus.grpc.port: 0\nnimbus.admins: [alice]\nnimbus.max.concurrent.uploads: many\n")
	line := strings.Count(common, "\n") + 3
	waitLog(t, logs, `"level":"ERROR"`, "last good configuration",
		fmt.Sprintf(`%s:%d: nimbus.max.concurrent.uploads: \"many\" is not an integer`, path, line))
	if err := mayRead(bob); err != nil {
		t.Errorf("bob after an invalid file: %v, want the last good configuration in force", err)
	}
	refused("alice named by an invalid file", alice)
}

// fileNimbus is a secure nimbus started from a file that the test
// rewrites.
type fileNimbus struct {
	s      *Server
	logs   *lockedBuffer
	path   string
	common string                           // the file's keys that never change
	write  func(extra string)               // the file: common and extra
	issue  func(string, bool) *certs.Issued // a certificate of the test's CA (a server's too)
}

// startFromFile starts a nimbus with TLS and client authentication from a
// file holding its common keys and extra, logging JSON to a buffer, and
// stops it when tb ends.
func startFromFile(tb testing.TB, extra string) *fileNimbus {
	tb.Helper()
	t := tb
	z := testcluster.StartZooKeeper(t)
	dir := t.TempDir()
	ca, err := certs.NewCA(filepath.Join(dir, "ca"), "reload test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string, server bool) *certs.Issued {
		opts := certs.CertOptions{Client: true, Lifetime: 30 * time.Minute}
		if server {
			opts.Server, opts.Hosts = true, []string{"127.0.0.1", "localhost"}
		}
		is, err := ca.Issue(filepath.Join(dir, "certs"), name, opts)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	self := issue("nimbus", true)
	path := filepath.Join(dir, "storm.yaml")
	common := fmt.Sprintf("storm.zookeeper.servers: [%q]\nstorm.zookeeper.session.timeout: 4000\nstorm.local.dir: %q\n"+
		"nimbus.host: 127.0.0.1\nnimbus.metrics.port: -1\nui.port: -1\nnimbus.drain.timeout.secs: 1\n"+
		"nimbus.grpc.tls.enable: true\nnimbus.grpc.tls.client.auth.required: true\n"+
		"nimbus.grpc.tls.cert.path: %q\nnimbus.grpc.tls.key.path: %q\nnimbus.grpc.tls.truststore.path: %q\n",
		z.Addr(), filepath.Join(dir, "local"), self.Cert, self.Key, self.Truststore)
	write := func(extra string) {
		if err := os.WriteFile(path, []byte(common+extra), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(extra)

	cfg, _, err := configs.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	logger, err := logging.New(logs, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	s := runServer(t, New(cfg, logger))

	return &fileNimbus{s: s, logs: logs, path: path, common: common, write: write, issue: issue}
}

// callerAs is a NimbusService client of s presenting is.
func callerAs(t testing.TB, s *Server, is *certs.Issued) nimbusv1.NimbusServiceClient {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(is.Cert, is.Key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(is.Truststore)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(
		&tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return nimbusv1.NewNimbusServiceClient(conn)
}

// waitLog waits until one line of logs holds every part.
func waitLog(t testing.TB, logs *lockedBuffer, parts ...string) {
	t.Helper()
	testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("a log line with %q", parts), func() error {
		for line := range strings.Lines(logs.String()) {
			found := true
			for _, p := range parts {
				found = found && strings.Contains(line, p)
			}
			if found {
				return nil
			}
		}
		return fmt.Errorf("not logged yet; the last lines: %s", lastLines(logs.String(), 3))
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lockedBuffer is a log's destination that a test reads while the daemon
// writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
