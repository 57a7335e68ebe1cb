package testcluster

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
)

const (
	// DefaultRoot is storm.zookeeper.root of a Cluster's daemons.
	DefaultRoot = "/storm"
	// DefaultSessionTimeout is their storm.zookeeper.session.timeout.
	DefaultSessionTimeout = 4 * time.Second

	readyTimeout = 30 * time.Second // from start to the ready line
	closeTimeout = 10 * time.Second // from SIGTERM to SIGKILL at Close
	failedLogs   = 60               // lines of each daemon's log shown when a test fails
	// logsEnv set to anything shows the daemons' logs of passing tests too.
	logsEnv = "NIMBUS_TEST_LOGS"
	// securityEnv=on turns security on in every Cluster New makes
	// (WithSecurity, with a NewSecurity of the test's own), so that tests
	// written without it run with it too (make test runs some so).
	securityEnv = "NIMBUS_TEST_SECURITY"
)

// Cluster starts nimbuses and supervisors, as real processes from the
// binaries Main builds, on one ZooKeeper, and stops them when the test
// ends. Its fields are set by New and must not change.
type Cluster struct {
	Bin            Binaries
	ZooKeeper      string // the daemons' connect string
	Root           string // storm.zookeeper.root
	SessionTimeout time.Duration
	Dir            string // a log file and a local dir per daemon
	// Security, when not nil, turns security on for every daemon and for
	// the Cluster's own clients (WithSecurity).
	Security *Security

	logf func(format string, args ...any) // progress: a daemon is ready

	mu      sync.Mutex
	started []*Process
	conns   map[string]*grpc.ClientConn
	seq     int
}

// ClusterOption adjusts New.
type ClusterOption func(*Cluster)

// WithRoot sets storm.zookeeper.root (DefaultRoot).
func WithRoot(root string) ClusterOption { return func(c *Cluster) { c.Root = root } }

// WithSessionTimeout sets storm.zookeeper.session.timeout
// (DefaultSessionTimeout).
func WithSessionTimeout(d time.Duration) ClusterOption {
	return func(c *Cluster) { c.SessionTimeout = d }
}

// WithDir puts the daemons' logs and local dirs in dir instead of a new
// temporary directory of the test; New creates dir if need be, and does not
// remove it.
func WithDir(dir string) ClusterOption { return func(c *Cluster) { c.Dir = dir } }

// WithSecurity turns security on with sec's CA and credentials: every
// nimbus and supervisor serves and dials gRPC over TLS with a certificate
// of its own (NimbusPrincipal or SupervisorPrincipal, for 127.0.0.1;
// Process.Identity), nimbuses require client certificates and are told
// nimbus.admins AdminPrincipal, nimbus.supervisor.users SupervisorPrincipal
// and nimbus.daemon.users NimbusPrincipal, and every daemon authenticates
// to ZooKeeper with sec.ZooKeeperAuth (digest, given in the environment),
// so the nodes it creates carry ACLs. Conn, API, Health and the leader
// helpers dial as sec.Admin; ConnAs and APIAs as anyone; Process.Metrics
// speaks HTTPS. A daemon's WithArgs come after these flags, so a test can
// change any of them (nimbus.users, say).
func WithSecurity(sec *Security) ClusterOption { return func(c *Cluster) { c.Security = sec } }

// WithLogf reports progress to logf instead of t.Logf: a benchmark, whose
// log is always printed, passes one that drops it.
func WithLogf(logf func(format string, args ...any)) ClusterOption {
	return func(c *Cluster) { c.logf = logf }
}

// New returns a Cluster on the ZooKeeper at zkConnect that has started
// nothing. It builds the binaries if no test has yet (see Bin). At the
// end of the test it prints the tail of every daemon's log if the test
// failed (or NIMBUS_TEST_LOGS is set), then closes the cluster. With
// NIMBUS_TEST_SECURITY=on in the environment, security is on as
// WithSecurity(NewSecurity(t)) makes it, unless an option set it. It fails
// the test if the binaries cannot be built or dir cannot be made.
func New(t testing.TB, zkConnect string, opts ...ClusterOption) *Cluster {
	t.Helper()
	c := &Cluster{
		Bin:            Bin(t),
		ZooKeeper:      zkConnect,
		Root:           DefaultRoot,
		SessionTimeout: DefaultSessionTimeout,
		logf:           t.Logf,
	}
	for _, o := range opts {
		o(c)
	}
	if c.Security == nil && os.Getenv(securityEnv) == "on" {
		c.Security = NewSecurity(t)
	}
	if c.Dir == "" {
		c.Dir = t.TempDir()
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv(logsEnv) != "" {
			t.Log("\n" + c.Logs(failedLogs))
		}
		c.Close()
	})
	return c
}

// Live returns the processes that have not exited, in the order started.
func (c *Cluster) Live() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Process
	for _, p := range c.started {
		if p.Running() {
			out = append(out, p)
		}
	}
	return out
}

// Close stops every live process, one after the other, with SIGTERM and
// SIGKILL 10 s later (see Process.Stop), ends the workers the supervisors'
// keepers still hold (StopKeepers), then closes the gRPC connections. It
// returns when all have exited. New calls it at the end of the test; an
// earlier call is allowed, and a later one does nothing more.
func (c *Cluster) Close() {
	for _, p := range c.Live() {
		_ = p.Stop(syscall.SIGTERM, closeTimeout)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.started {
		if p.supervisor {
			StopKeepers(p.LocalDir)
		}
	}
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = nil
}

// Logs returns the last n lines of every process's log, for a failed test.
func (c *Cluster) Logs(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.started {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.Name, p.LogPath, p.Tail(n))
	}
	return b.String()
}
