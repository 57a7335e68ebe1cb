package integration

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// TLS to ZooKeeper end to end: a ZooKeeper that serves TLS only (no
// plaintext port, client certificates required), a nimbus and a supervisor
// as processes that reach it with storm.zookeeper.ssl.* and digest
// authentication. They lead and register over TLS, their nodes carry the
// digest ACL, and a daemon whose truststore holds another CA does not start,
// saying which key to fix.
func TestZooKeeperOverTLS(t *testing.T) {
	sec := testcluster.NewSecurity(t)
	z, zt := testcluster.StartZooKeeperTLS(t)
	_, port, err := net.SplitHostPort(z.Addr())
	if err != nil {
		t.Fatal(err)
	}
	servers := "localhost:" + port // a name: hostname verification is on
	c := testcluster.New(t, servers, testcluster.WithSecurity(sec))
	nimbus, err := c.StartNimbus(testcluster.WithArgs(zt.DaemonArgs(t, "nimbus-zk")...))
	if err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, []*testcluster.Process{nimbus}, 30*time.Second)
	sup, err := c.StartSupervisor(testcluster.WithArgs(zt.DaemonArgs(t, "supervisor-zk")...))
	if err != nil {
		t.Fatal(err)
	}

	// The test's own session: over TLS, as the cluster's digest identity.
	keystore := zt.Keystore(t, "operator")
	tlsm, err := certs.Load(certs.Files{Cert: keystore, Key: keystore, Truststore: zt.CAFile}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{servers}, SessionTimeout: 5 * time.Second, Root: c.Root, Logger: slog.New(slog.DiscardHandler),
		TLS:        &cluster.TLS{Config: tlsm.ClientConfig, Check: "the test's own TLS"},
		AuthScheme: cluster.AuthDigest, AuthPayload: sec.ZooKeeperAuth,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	user, password, _ := strings.Cut(sec.ZooKeeperAuth, ":")
	digest := zk.DigestACL(zk.PermAll, user, password)[0]
	registration := s.Paths().Supervisors() + "/" + sup.ID()
	testcluster.WaitFor(t, 15*time.Second, "the supervisor's registration", func() error {
		_, _, err := s.Conn().Get(registration)
		return err
	})
	for _, p := range []string{s.Paths().Storms(), s.Paths().Nimbuses(), registration} {
		acl, _, err := s.Conn().GetACL(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !slices.Contains(acl, digest) || slices.Contains(acl, zk.WorldACL(zk.PermAll)[0]) {
			t.Errorf("%s: ACL %v, want the cluster's digest identity and no write for anyone", p, acl)
		}
	}

	// Another CA: the nimbus refuses ZooKeeper's certificate and does not
	// start, naming the truststore's key; it never tries plaintext, which
	// no port would answer anyway.
	foreign, err := certs.NewCA(filepath.Join(t.TempDir(), "ca"), "another-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := c.StartNimbus(testcluster.WithName("nimbus-wrong-ca"), testcluster.WithArgs(
		"--"+configs.KeyZKSSLEnable+"=true",
		"--"+configs.KeyZKSSLKeystore+"="+zt.Keystore(t, "nimbus-wrong-ca"),
		"--"+configs.KeyZKSSLTruststore+"="+foreign.CertFile,
		"--"+configs.KeyZKConnectionTimeout+"=2000"))
	if err == nil {
		t.Fatalf("a nimbus trusting another CA started (%s)", wrong.Name)
	}
	log, readErr := os.ReadFile(filepath.Join(c.Dir, "nimbus-wrong-ca.log"))
	if readErr != nil {
		t.Fatal(readErr)
	}
	if !strings.Contains(string(log), configs.KeyZKSSLTruststore) || !strings.Contains(string(log), "not signed by a CA") {
		t.Errorf("the refused nimbus's log does not say that ZooKeeper's certificate is untrusted, naming %s:\n%s", configs.KeyZKSSLTruststore, log)
	}
}
