package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/configs"
)

// zkTLSClasspath adds what Netty's TLS needs and Debian's zookeeper.jar
// manifest does not name.
const zkTLSClasspath = "/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"

// ZooKeeperTLS is the TLS of a server StartZooKeeperTLS started: a
// throwaway CA that signed the server's certificate, that clients trust
// (CAFile), and that issues the certificates the server asks clients for.
type ZooKeeperTLS struct {
	CAFile string // PEM: storm.zookeeper.ssl.truststore.path
	ca     *certs.CA
	dir    string
}

// StartZooKeeperTLS starts a standalone server that serves TLS only: its
// client port is a secureClientPort (Netty, PEM key and trust stores,
// ssl.clientAuth=need: a client without a certificate of the CA is
// refused), and no plaintext clientPort is opened. Addr is the secure
// port. It fails the test as StartZooKeeper does.
func StartZooKeeperTLS(t testing.TB) (*ZooKeeper, *ZooKeeperTLS) {
	t.Helper()
	requireInstalled(t)
	zt := newZooKeeperTLS(t)
	z := newZooKeeper(t, "zookeeper-tls", 0, FreePorts(t, 1)[0], nil)
	server, err := zt.ca.Issue(zt.dir, "zookeeper", certs.CertOptions{Server: true, Client: true, Hosts: []string{daemonHost, "localhost"}, Lifetime: certLifetime})
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	keystore := zt.joinKeystore(t, server)
	cfgPath := filepath.Join(z.dir, "zoo.cfg")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	// The client port and its address become the secure ones; nothing
	// else listens.
	secure := regexp.MustCompile(`(?m)^clientPort`).ReplaceAllString(string(cfg), "secureClientPort")
	secure += strings.Join([]string{
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + keystore,
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + zt.CAFile,
		"ssl.trustStore.type=PEM",
		"ssl.clientAuth=need",
		// A client's certificate is checked against the CA, not against
		// the address it connects from.
		"ssl.hostnameVerification=false",
	}, "\n") + "\n"
	if err := os.WriteFile(cfgPath, []byte(secure), 0o644); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	z.probe = zt.clientConfig(t, "zookeeper-probe")
	z.Start()
	return z, zt
}

// newZooKeeperTLS makes the CA in a temporary directory of the test.
func newZooKeeperTLS(t testing.TB) *ZooKeeperTLS {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA(filepath.Join(dir, "ca"), "zookeeper-ca", caLifetime)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return &ZooKeeperTLS{CAFile: ca.CertFile, ca: ca, dir: dir}
}

// Keystore issues a client certificate named name and returns the path of
// its keystore: the certificate and its key in one PEM file, as
// storm.zookeeper.ssl.keystore.path takes them.
func (zt *ZooKeeperTLS) Keystore(t testing.TB, name string) string {
	t.Helper()
	is, err := zt.ca.Issue(zt.dir, name, certs.CertOptions{Client: true, Lifetime: certLifetime})
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return zt.joinKeystore(t, is)
}

// DaemonArgs are the flags of a daemon that reaches this ZooKeeper over
// TLS with a certificate of its own named name.
func (zt *ZooKeeperTLS) DaemonArgs(t testing.TB, name string) []string {
	t.Helper()
	return []string{
		"--" + configs.KeyZKSSLEnable + "=true",
		"--" + configs.KeyZKSSLKeystore + "=" + zt.Keystore(t, name),
		"--" + configs.KeyZKSSLTruststore + "=" + zt.CAFile,
	}
}

// joinKeystore writes is's certificate and key into <name>-keystore.pem
// (mode 0600) and returns its path.
func (zt *ZooKeeperTLS) joinKeystore(t testing.TB, is *certs.Issued) string {
	t.Helper()
	cert, err := os.ReadFile(is.Cert)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	key, err := os.ReadFile(is.Key)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	path := strings.TrimSuffix(is.Cert, ".pem") + "-keystore.pem"
	if err := os.WriteFile(path, append(key, cert...), 0o600); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return path
}

// clientConfig is the TLS of the test's own client named name: a
// certificate of the CA, and the server verified against it.
func (zt *ZooKeeperTLS) clientConfig(t testing.TB, name string) *tls.Config {
	t.Helper()
	path := zt.Keystore(t, name)
	pair, err := tls.LoadX509KeyPair(path, path)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(zt.ca.Cert)
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: daemonHost}
}
