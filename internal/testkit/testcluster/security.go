package testcluster

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/configs"
)

// The principals a secure Cluster's daemons and its default client are
// (the common names of their certificates), and what its daemons are told
// about them: nimbus.daemon.users, nimbus.supervisor.users and
// nimbus.admins.
const (
	NimbusPrincipal     = "nimbus"
	SupervisorPrincipal = "supervisor"
	AdminPrincipal      = "admin"
)

// Lifetimes of the CA and of the certificates a Security makes.
const (
	caLifetime   = 24 * time.Hour
	certLifetime = 12 * time.Hour
)

// The common names of the CA of a Security and of the other CA that
// Foreign's certificates come from.
const (
	CAName        = "Nimbus-HA test CA"
	ForeignCAName = "Another CA"
)

// daemonHost is the address the daemons listen on and are dialed at, the
// name their certificates are for (with localhost).
const daemonHost = "127.0.0.1"

// Security is what a test needs to run clusters with security on: a
// throwaway CA, certificates for the daemons and for any client principal,
// and the ZooKeeper digest credentials. NewSecurity makes one; WithSecurity
// gives it to a Cluster. Its methods are safe for concurrent use.
type Security struct {
	Dir    string            // the CA and every certificate, in the test's temp dir
	CAFile string            // the CA's certificate (PEM): every process's truststore
	CACert *x509.Certificate // the CA's certificate
	// ZooKeeperAuth is the daemons' storm.zookeeper.auth.payload
	// (user:password, digest scheme): ConnectZooKeeperAs with it is a
	// client the nodes' ACLs let write.
	ZooKeeperAuth string
	// Admin is the certificate of AdminPrincipal, the identity a secure
	// Cluster's Conn, API, Health and WaitLeader use.
	Admin Identity

	ca      *certs.CA
	mu      sync.Mutex
	clients map[string]Identity // by principal
	foreign *certs.CA           // made on first use by Foreign
	aliens  map[string]Identity
}

// Identity is one principal's TLS material, as the files the
// nimbus.grpc.tls.* keys name: a certificate and its key (none for
// Anonymous) and the truststore that verifies the nimbuses.
type Identity struct {
	Principal  string // the certificate's common name; "" without one
	Cert       string // PEM: nimbus.grpc.tls.cert.path
	Key        string // PEM: nimbus.grpc.tls.key.path
	Truststore string // PEM: nimbus.grpc.tls.truststore.path
}

// NewSecurity makes a CA valid for a day (certificates for 12 hours) in a
// new temporary directory of the test, a certificate for AdminPrincipal,
// and random ZooKeeper credentials. It fails the test if it cannot write
// them.
func NewSecurity(t testing.TB) *Security {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA(filepath.Join(dir, "ca"), CAName, caLifetime)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	s := &Security{Dir: dir, CAFile: ca.CertFile, CACert: ca.Cert, ZooKeeperAuth: "nimbus:" + randomHex(t, 12), ca: ca,
		clients: map[string]Identity{}, aliens: map[string]Identity{}}
	s.Admin = s.Client(t, AdminPrincipal)
	return s
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return hex.EncodeToString(b)
}

// Client returns the client certificate of principal (its common name),
// made on the first call for that principal.
func (s *Security) Client(t testing.TB, principal string) Identity {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.clients[principal]; ok {
		return id
	}
	id, _, err := issue(s.ca, filepath.Join(s.Dir, "clients"), principal, false, certLifetime)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	s.clients[principal] = id
	return id
}

// Foreign returns a client certificate of principal that another CA
// signed, with this CA as its truststore: a client that trusts the
// cluster, and that the cluster must refuse.
func (s *Security) Foreign(t testing.TB, principal string) Identity {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.aliens[principal]; ok {
		return id
	}
	if s.foreign == nil {
		ca, err := certs.NewCA(filepath.Join(s.Dir, "foreign-ca"), ForeignCAName, caLifetime)
		if err != nil {
			t.Fatalf("testcluster: %v", err)
		}
		s.foreign = ca
	}
	id, _, err := issue(s.foreign, filepath.Join(s.Dir, "foreign"), principal, false, certLifetime)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	id.Truststore = s.CAFile
	s.aliens[principal] = id
	return id
}

// Anonymous is a client that trusts the cluster and has no certificate.
func (s *Security) Anonymous() Identity { return Identity{Truststore: s.CAFile} }

// daemon returns the certificate (server and client, for 127.0.0.1 and
// localhost) of the daemon whose files live in dir, as principal, making
// it unless a daemon of that name made it before: a daemon restarted as
// itself keeps its certificate.
func (s *Security) daemon(dir, principal string) (Identity, error) {
	id := Identity{Principal: principal, Cert: filepath.Join(dir, principal+".pem"),
		Key: filepath.Join(dir, principal+"-key.pem"), Truststore: s.CAFile}
	if _, err := os.Stat(id.Cert); err == nil {
		return id, nil
	}
	id, _, err := issue(s.ca, dir, principal, true, certLifetime)
	return id, err
}

// Reissue replaces id's certificate and key, in place, with a new pair for
// the same principal (server and client, for 127.0.0.1, as a daemon's)
// valid for lifetime from now: a rotation, as an operator's tooling does
// it, each file renamed over the old one (the key first). It returns the
// new certificate. A process that uses id sees the new pair at its next
// look at the files (certs.DefaultCheckInterval).
func (s *Security) Reissue(id Identity, lifetime time.Duration) (*x509.Certificate, error) {
	tmp, err := os.MkdirTemp(s.Dir, "reissue-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	next, leaf, err := issue(s.ca, tmp, id.Principal, true, lifetime)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(next.Key, id.Key); err != nil {
		return nil, err
	}
	if err := os.Rename(next.Cert, id.Cert); err != nil {
		return nil, err
	}
	return leaf, nil
}

// RootCAs is a pool that holds the CA.
func (s *Security) RootCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.CACert)
	return pool
}

// MetricsTLS is the configuration of an HTTPS client of the daemons'
// metrics ports: it trusts the CA and checks the name 127.0.0.1, which
// every daemon's certificate is for, whatever address it dials (a
// supervisor's ready line gives its metrics address as [::]:port).
func (s *Security) MetricsTLS() *tls.Config {
	return &tls.Config{RootCAs: s.RootCAs(), ServerName: daemonHost, MinVersion: tls.VersionTLS12}
}

// ClientFlags are the flags that make stormctl speak TLS as id
// (configs.ClientFlagKeys): TLS on, its certificate and key if it has
// them, and the truststore.
func (id Identity) ClientFlags() []string {
	flags := []string{"--" + configs.KeyTLSEnable, "--" + configs.KeyTLSTruststore + "=" + id.Truststore}
	if id.Cert != "" {
		flags = append(flags, "--"+configs.KeyTLSCert+"="+id.Cert, "--"+configs.KeyTLSKey+"="+id.Key)
	}
	return flags
}

// WriteConfig writes a storm.yaml for a client (stormctl --config) that
// reaches seeds and speaks TLS as id, in dir, and returns its path.
func (id Identity) WriteConfig(dir string, seeds []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: [%s]\n%s: true\n%s: %q\n", configs.KeyNimbusSeeds, strings.Join(seeds, ", "),
		configs.KeyTLSEnable, configs.KeyTLSTruststore, id.Truststore)
	if id.Cert != "" {
		fmt.Fprintf(&b, "%s: %q\n%s: %q\n", configs.KeyTLSCert, id.Cert, configs.KeyTLSKey, id.Key)
	}
	name := "anonymous"
	if id.Principal != "" {
		name = id.Principal
	}
	f, err := os.CreateTemp(dir, name+"-*.yaml")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}

// TLSConfig is the configuration of a TLS client of a daemon at 127.0.0.1
// that presents id's certificate (none for Anonymous) to any server that
// asks for one, and verifies the
// daemon's against id's truststore, as read now, with crypto/tls alone: a
// client that is not Nimbus-HA's own.
func (id Identity) TLSConfig() (*tls.Config, error) {
	pemCAs, err := os.ReadFile(id.Truststore)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCAs) {
		return nil, fmt.Errorf("testcluster: no certificate in %s", id.Truststore)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: daemonHost, MinVersion: tls.VersionTLS12}
	if id.Cert != "" {
		pair, err := tls.LoadX509KeyPair(id.Cert, id.Key)
		if err != nil {
			return nil, err
		}
		// Presented whatever CAs the server names (crypto/tls would send
		// nothing rather than a Foreign certificate).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return cfg, nil
}

// Credentials are gRPC transport credentials made from TLSConfig: they
// present id's certificate and check the name of the host dialed.
func (id Identity) Credentials() (credentials.TransportCredentials, error) {
	cfg, err := id.TLSConfig()
	if err != nil {
		return nil, err
	}
	cfg.ServerName = "" // gRPC checks the host of the address dialed
	return credentials.NewTLS(cfg), nil
}

// secureArgs are the flags of a daemon of kind ("nimbus" or "supervisor")
// that presents id, and the environment with the ZooKeeper credentials
// (a secret: not a flag, which every user of the machine can read).
func (s *Security) secureArgs(kind string, id Identity) (args, env []string) {
	flag := func(key, value string) { args = append(args, "--"+key+"="+value) } // =: a boolean flag takes no separate value
	flag(configs.KeyTLSEnable, "true")
	flag(configs.KeyTLSCert, id.Cert)
	flag(configs.KeyTLSKey, id.Key)
	flag(configs.KeyTLSTruststore, id.Truststore)
	flag(configs.KeyZKAuthScheme, configs.ZKAuthDigest)
	// A supervisor serves its code to nimbuses by the same rules.
	flag(configs.KeyTLSClientAuthRequired, "true")
	flag(configs.KeyNimbusAdmins, AdminPrincipal)
	flag(configs.KeyNimbusDaemonUsers, NimbusPrincipal)
	if kind == "nimbus" {
		flag(configs.KeyNimbusSupervisorUsers, SupervisorPrincipal)
	}
	env = []string{configs.EnvName(configs.KeyZKAuthPayload) + "=" + s.ZooKeeperAuth}
	return args, env
}

// issue makes, with ca, the certificate of principal (its common name) for
// clients and, if daemon, for servers at 127.0.0.1 and localhost, valid for
// lifetime, in dir/<principal>.pem and dir/<principal>-key.pem.
func issue(ca *certs.CA, dir, principal string, daemon bool, lifetime time.Duration) (Identity, *x509.Certificate, error) {
	opts := certs.CertOptions{Client: true, Lifetime: lifetime}
	if daemon {
		opts.Server, opts.Hosts = true, []string{daemonHost, "localhost"}
	}
	is, err := ca.Issue(dir, principal, opts)
	if err != nil {
		return Identity{}, nil, fmt.Errorf("testcluster: %w", err)
	}
	return Identity{Principal: principal, Cert: is.Cert, Key: is.Key, Truststore: is.Truststore}, is.Leaf, nil
}
