package cluster_test

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// recordingDialer dials TCP and keeps every connection it made, with the
// first byte the session wrote on it: 0x16 opens a TLS handshake record,
// anything else would be ZooKeeper's protocol in the clear.
type recordingDialer struct {
	mu    sync.Mutex
	conns []*firstByte
}

type firstByte struct {
	net.Conn
	mu    sync.Mutex
	first []byte
}

func (c *firstByte) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.first == nil && len(b) > 0 {
		c.first = []byte{b[0]}
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (d *recordingDialer) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	fb := &firstByte{Conn: conn}
	d.mu.Lock()
	d.conns = append(d.conns, fb)
	d.mu.Unlock()
	return fb, nil
}

// firstBytes returns the first byte written on each connection (0 if none).
func (d *recordingDialer) firstBytes() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]byte, len(d.conns))
	for i, c := range d.conns {
		c.mu.Lock()
		if c.first != nil {
			out[i] = c.first[0]
		}
		c.mu.Unlock()
	}
	return out
}

// zkTLS is a session's TLS from a keystore and truststore, as the daemons
// make it (internal/daemon.LoadZKTLS), verifying the host dialed.
func zkTLS(t *testing.T, keystore, truststore string) *cluster.TLS {
	t.Helper()
	r, err := certs.Load(certs.Files{Cert: keystore, Key: keystore, Truststore: truststore}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return &cluster.TLS{Config: r.ClientConfig, Check: "check the TLS settings"}
}

// A session told to use TLS reaches a ZooKeeper that serves TLS only,
// authenticates with digest over it, and gives its nodes the ACL; every
// connection its dialer made began with a TLS handshake; and the server
// listens on its secure port alone, which a plaintext client cannot use.
func TestSessionOverTLSOnly(t *testing.T) {
	z, zt := testcluster.StartZooKeeperTLS(t)
	keystore := zt.Keystore(t, "nimbus")
	var dialer recordingDialer
	s := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, func(cfg *cluster.SessionConfig) {
		cfg.Servers = []string{"localhost:" + port(t, z.Addr())} // a name, checked against the certificate
		cfg.Dialer = dialer.dial
		cfg.TLS = zkTLS(t, keystore, zt.CAFile)
	})

	// Digest ACLs apply as without TLS: the cluster's nodes carry them,
	// and a client without the credentials cannot write under them.
	if err := s.EnsureDirs(layout(s.Paths())...); err != nil {
		t.Fatal(err)
	}
	for _, p := range layout(s.Paths()) {
		if err := checkACL(s.Conn(), p); err != nil {
			t.Error(err)
		}
	}
	anon := connectAs(t, z.Addr(), "", func(cfg *cluster.SessionConfig) {
		cfg.TLS = zkTLS(t, zt.Keystore(t, "anonymous"), zt.CAFile)
	})
	if _, err := anon.Conn().Create(s.Paths().Storms()+"/intruder", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("anonymous create under %s over TLS = %v, want %v", s.Paths().Storms(), err, zk.ErrNoAuth)
	}

	bytes := dialer.firstBytes()
	if len(bytes) == 0 {
		t.Fatal("the session's dialer was never called")
	}
	for i, b := range bytes {
		if b != 0x16 {
			t.Errorf("connection %d began with byte %#x, not a TLS handshake (0x16)", i, b)
		}
	}

	// Nothing but the secure port listens; a plaintext session gets none.
	if ports := listeningPorts(t, z.Pid()); len(ports) != 1 || ports[0] != port(t, z.Addr()) {
		t.Errorf("ZooKeeper listens on %v, want only its secureClientPort %s", ports, port(t, z.Addr()))
	}
	_, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{z.Addr()}, SessionTimeout: 4 * time.Second, ConnectTimeout: 2 * time.Second,
		Root: "/storm", Logger: slog.New(slog.DiscardHandler),
	})
	if !errors.Is(err, cluster.ErrNoSession) {
		t.Errorf("plaintext Connect to the secure port = %v, want %v", err, cluster.ErrNoSession)
	}
}

// A session whose truststore holds another CA refuses the server, and
// Connect's error says why and what to check, with no plaintext attempt.
func TestSessionRefusesUntrustedZooKeeper(t *testing.T) {
	z, zt := testcluster.StartZooKeeperTLS(t)
	foreign, err := certs.NewCA(filepath.Join(t.TempDir(), "ca"), "another-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := zkTLS(t, zt.Keystore(t, "nimbus"), foreign.CertFile)
	tlsCfg.Check = "check storm.zookeeper.ssl.truststore.path"
	var dialer recordingDialer
	_, err = cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{z.Addr()}, SessionTimeout: 4 * time.Second, ConnectTimeout: 2 * time.Second,
		Root: "/storm", Logger: slog.New(slog.DiscardHandler), Dialer: dialer.dial, TLS: tlsCfg,
	})
	if !errors.Is(err, cluster.ErrNoSession) || !errors.Is(err, certs.ErrUntrusted) ||
		!strings.Contains(err.Error(), "storm.zookeeper.ssl.truststore.path") {
		t.Fatalf("Connect with another CA = %v, want %v wrapping %v and naming the truststore's key", err, cluster.ErrNoSession, certs.ErrUntrusted)
	}
	for i, b := range dialer.firstBytes() {
		if b != 0x16 {
			t.Errorf("connection %d began with byte %#x, not a TLS handshake (0x16)", i, b)
		}
	}
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// listeningPorts lists the TCP ports process pid listens on, from its
// socket descriptors and /proc/net/tcp{,6}.
func listeningPorts(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			n, err := strconv.ParseUint(hexPort, 16, 16)
			if err != nil {
				t.Fatal(err)
			}
			ports = append(ports, strconv.FormatUint(n, 10))
		}
	}
	return ports
}
