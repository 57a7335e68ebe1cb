package bench

// What BenchmarkSecurity needs to run a cluster with security on: a CA,
// certificates, the daemons' flags and environment, and clients that
// present a certificate. internal/testcluster is getting the same (a
// Security value and a WithSecurity cluster option); once it has, this file
// folds into it: newBenchSecurity into its Security, nimbusOptions into
// WithSecurity, and dial and agreedLeader into Cluster.Conn and
// Cluster.AgreedLeader dialing with the cluster's credentials.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Principals (certificate common names) of the secure clusters.
const (
	benchNimbusPrincipal = "nimbus"     // every nimbus: serves, and fetches code from the others
	benchUserPrincipal   = "bench-user" // the benchmark's client: submits, kills its own, reads
	benchZKPayload       = "nimbus-bench:bench-secret"
)

// benchSecurity is the material of a secure cluster: a throwaway CA, one
// certificate shared by the nimbuses (server and client, for 127.0.0.1),
// one for the benchmark's client, and the ZooKeeper digest credentials.
type benchSecurity struct {
	ca     *certs.CA
	nimbus *certs.Issued
	user   *certs.Issued
	creds  credentials.TransportCredentials // the user's: TLS with its certificate
}

// newBenchSecurity makes the CA and certificates in dir.
func newBenchSecurity(dir string) (*benchSecurity, error) {
	ca, err := certs.NewCA(filepath.Join(dir, "ca"), "", 0)
	if err != nil {
		return nil, err
	}
	nimbus, err := ca.Issue(filepath.Join(dir, "nimbus"), benchNimbusPrincipal,
		certs.CertOptions{Server: true, Client: true, Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		return nil, err
	}
	user, err := ca.Issue(filepath.Join(dir, "user"), benchUserPrincipal, certs.CertOptions{Client: true})
	if err != nil {
		return nil, err
	}
	r, err := certs.Load(user.Files, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return &benchSecurity{ca: ca, nimbus: nimbus, user: user, creds: r.ClientCredentials()}, nil
}

// nimbusOptions turn security on in a nimbus: TLS with client
// certificates required (so authentication and authorization), lists that
// name the benchmark's user among others, and ZooKeeper digest ACLs (the
// secret through the environment, as the daemons want it).
func (s *benchSecurity) nimbusOptions() []testcluster.DaemonOption {
	return []testcluster.DaemonOption{
		testcluster.WithArgs(
			"--"+configs.KeyTLSEnable, "true",
			"--"+configs.KeyTLSCert, s.nimbus.Cert,
			"--"+configs.KeyTLSKey, s.nimbus.Key,
			"--"+configs.KeyTLSTruststore, s.nimbus.Truststore,
			"--"+configs.KeyTLSClientAuthRequired, "true",
			"--"+configs.KeyNimbusAdmins, "admin",
			"--"+configs.KeyNimbusUsers, "alice,bob,"+benchUserPrincipal,
			"--"+configs.KeyNimbusDaemonUsers, benchNimbusPrincipal,
			"--"+configs.KeyNimbusSupervisorUsers, "supervisor",
			"--"+configs.KeyZKAuthScheme, configs.ZKAuthDigest,
		),
		testcluster.WithEnv(configs.EnvName(configs.KeyZKAuthPayload) + "=" + benchZKPayload),
	}
}

// anonymousCredentials are TLS credentials that trust the CA but present
// no certificate: a secure nimbus must refuse them.
func (s *benchSecurity) anonymousCredentials() (credentials.TransportCredentials, error) {
	r, err := certs.Load(certs.Files{Truststore: s.ca.CertFile}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return r.ClientCredentials(), nil
}

// securityMode is one side of the comparison: security off (sec nil) or on.
type securityMode struct {
	name string // "off" or "on"
	sec  *benchSecurity
}

// credentials are the benchmark client's: plaintext, or TLS with its
// certificate.
func (m securityMode) credentials() credentials.TransportCredentials {
	if m.sec == nil {
		return insecure.NewCredentials()
	}
	return m.sec.creds
}

// nimbusOptions are the mode's daemon options.
func (m securityMode) nimbusOptions() []testcluster.DaemonOption {
	if m.sec == nil {
		return nil
	}
	return m.sec.nimbusOptions()
}

// dial returns a new connection to addr with the mode's credentials, as a
// new client makes: it connects at its first call.
func (m securityMode) dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(m.credentials()))
}

// client returns an SDK client for seeds with the mode's credentials.
func (m securityMode) client(seeds []string) (*client.Client, error) {
	return client.New(seeds, client.WithDialOptions(grpc.WithTransportCredentials(m.credentials())))
}

// agreedLeader polls, through connections of the mode, until every process
// of ps names the same leader, one of ps, and returns it: what
// testcluster's AgreedLeader does over plaintext.
func (m securityMode) agreedLeader(ps []*testcluster.Process, timeout time.Duration) (*testcluster.Process, error) {
	conns := map[*testcluster.Process]*grpc.ClientConn{}
	defer func() {
		for _, cc := range conns {
			cc.Close()
		}
	}()
	for _, p := range ps {
		cc, err := m.dial(p.Addr())
		if err != nil {
			return nil, err
		}
		conns[p] = cc
	}
	var leader *testcluster.Process
	err := testcluster.Poll(timeout, func() error {
		var addr string
		for _, p := range ps {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := nimbusv1.NewNimbusServiceClient(conns[p]).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			l := resp.GetLeader()
			a := l.GetHost() + ":" + strconv.Itoa(int(l.GetPort()))
			if addr == "" {
				addr = a
			} else if a != addr {
				return fmt.Errorf("%s names %s, others %s", p.Name, a, addr)
			}
		}
		for _, p := range ps {
			if p.Addr() == addr {
				leader = p
				return nil
			}
		}
		return fmt.Errorf("leader %s is not among %s", addr, strings.Join(testcluster.Addrs(ps...), ", "))
	})
	if err != nil {
		return nil, fmt.Errorf("security %s: no agreed leader: %w", m.name, err)
	}
	return leader, nil
}

// errNotRefused: a secure nimbus answered a caller it should have refused.
var errNotRefused = errors.New("not refused")
