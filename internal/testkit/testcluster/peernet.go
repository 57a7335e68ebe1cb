package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// hostsEnv names the hosts file a daemon started through PeerNet's
// wrappers sees as /etc/hosts.
const hostsEnv = "TESTCLUSTER_HOSTS"

// PeerNet lets a test cut daemons off each other while each stays
// reachable by everyone else: a nimbus cut from the other nimbuses keeps
// its ZooKeeper session and its clients.
//
// Each daemon i advertises a host name, Name(i), and listens on every
// interface (nimbus.host set to a name, not an IP literal). Each runs in
// a mount namespace of its own (unshare(1)) whose /etc/hosts resolves
// peer j's name to a loopback address kept for the pair, 127.B.i.j (every
// 127.0.0.0/8 address reaches a socket listening on all interfaces), and
// its own name to 127.0.0.1. Cut(i, j) routes 127.B.i.j nowhere (a
// blackhole route in the kernel's local table), so i's connections to j,
// and only those, fail, both the open ones and new ones; Restore deletes
// the routes. Every other process (supervisors through Env(-1), the
// test's clients through Dial) resolves every name to 127.0.0.1.
//
// It needs root, unshare(1), mount(8) and ip(8): PeerNetAvailable says
// whether this machine has them.
type PeerNet struct {
	names []string
	base  int // the second octet of the pairs' addresses
	dir   string
	bin   Binaries

	mu  sync.Mutex
	cut map[string]bool // blackholed addresses
}

// PeerNetAvailable says why PeerNet cannot run here, or nil if it can: it
// needs root, a mount namespace of its own (unshare) and a route of its own
// (ip).
func PeerNetAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("testcluster: PeerNet needs root (mount namespaces, routes)")
	}
	for _, tool := range []string{"unshare", "ip", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("testcluster: PeerNet needs %s: %w", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("testcluster: PeerNet: unshare --mount: %v: %s", err, out)
	}
	probe := fmt.Sprintf("127.%d.255.255/32", 100+os.Getpid()%100)
	if out, err := exec.Command("ip", "route", "add", "blackhole", probe, "table", "local").CombinedOutput(); err != nil {
		return fmt.Errorf("testcluster: PeerNet: ip route add blackhole: %v: %s", err, out)
	}
	_ = exec.Command("ip", "route", "del", "blackhole", probe, "table", "local").Run()
	return nil
}

// NewPeerNet prepares n daemons' views of each other: the hosts files,
// and wrappers of the nimbus and supervisor binaries (Binaries) that run
// them in their own mount namespace when given Env. Routes left behind are
// deleted at t.Cleanup.
func NewPeerNet(t testing.TB, n int) *PeerNet {
	t.Helper()
	real := Bin(t)
	p := &PeerNet{dir: t.TempDir(), cut: map[string]bool{}}
	// Spread over 127.100-199 by process, so that two runs on one machine
	// rarely share a pair's address.
	p.base = 100 + os.Getpid()%100
	for i := range n {
		p.names = append(p.names, fmt.Sprintf("nimbus-peer-%d.test", i+1))
	}
	for i := -1; i < n; i++ {
		var b strings.Builder
		b.WriteString("127.0.0.1 localhost\n")
		for j, name := range p.names {
			addr := "127.0.0.1"
			if i >= 0 && i != j {
				addr = p.pairAddr(i, j)
			}
			fmt.Fprintf(&b, "%s %s\n", addr, name)
		}
		if err := os.WriteFile(p.hostsFile(i), []byte(b.String()), 0o644); err != nil {
			t.Fatalf("testcluster: %v", err)
		}
	}
	wrapped := filepath.Join(p.dir, "bin")
	if err := os.MkdirAll(wrapped, 0o755); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	entries, err := os.ReadDir(real.Dir)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	for _, e := range entries {
		target := real.Path(e.Name())
		var err error
		if name := e.Name(); name == "nimbus" || name == "supervisor" {
			// unshare and sh exec, so the daemon keeps the pid the test
			// signals.
			script := fmt.Sprintf("#!/bin/sh\n"+
				"[ -n \"$%[1]s\" ] || exec %[2]q \"$@\"\n"+
				"exec unshare --mount --propagation private sh -c 'mount --bind \"$%[1]s\" /etc/hosts && exec \"$0\" \"$@\"' %[2]q \"$@\"\n",
				hostsEnv, target)
			err = os.WriteFile(filepath.Join(wrapped, name), []byte(script), 0o755)
		} else {
			err = os.Symlink(target, filepath.Join(wrapped, e.Name()))
		}
		if err != nil {
			t.Fatalf("testcluster: %v", err)
		}
	}
	p.bin = Binaries{Dir: wrapped}
	t.Cleanup(p.Restore)
	return p
}

func (p *PeerNet) hostsFile(i int) string {
	return filepath.Join(p.dir, fmt.Sprintf("hosts.%d", i+1))
}

// pairAddr is the address i dials j at.
func (p *PeerNet) pairAddr(i, j int) string {
	return fmt.Sprintf("127.%d.%d.%d", p.base, i+1, j+1)
}

// Name is the host name daemon i advertises (give it as nimbus.host).
func (p *PeerNet) Name(i int) string { return p.names[i] }

// Binaries are the wrapped programs; a Cluster made WithBinaries(this)
// runs its daemons through them.
func (p *PeerNet) Binaries() Binaries { return p.bin }

// Env is the environment variable that gives daemon i its view (WithEnv);
// -1 is the view of every other daemon, where every name is 127.0.0.1.
func (p *PeerNet) Env(i int) string { return hostsEnv + "=" + p.hostsFile(i) }

// Cut cuts daemon i's connections to daemon j, open and new: i's calls
// to j fail, while j's calls to i are not touched (Cut(j, i) for those).
// It returns an error if ip(8) does.
func (p *PeerNet) Cut(i, j int) error {
	addr := p.pairAddr(i, j)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut[addr] {
		return nil
	}
	if out, err := exec.Command("ip", "route", "add", "blackhole", addr+"/32", "table", "local").CombinedOutput(); err != nil {
		return fmt.Errorf("testcluster: ip route add blackhole %s: %v: %s", addr, err, out)
	}
	p.cut[addr] = true
	return nil
}

// Restore undoes every Cut.
func (p *PeerNet) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr := range p.cut {
		_ = exec.Command("ip", "route", "del", "blackhole", addr+"/32", "table", "local").Run()
		delete(p.cut, addr)
	}
}

// Dial dials addr, a host:port whose host may be one of the names, at
// 127.0.0.1: for the test's own gRPC clients (grpc.WithContextDialer),
// which the daemons' hosts files do not reach.
func (p *PeerNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		for _, name := range p.names {
			if strings.EqualFold(host, name) {
				addr = net.JoinHostPort("127.0.0.1", port)
			}
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// WithBinaries runs the Cluster's daemons from b instead of the test
// binary's build (PeerNet.Binaries).
func WithBinaries(b Binaries) ClusterOption { return func(c *Cluster) { c.Bin = b } }
