package cluster

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// handshakeTimeout bounds a TLS handshake with ZooKeeper. go-zookeeper
// gives a dial one second, which a JVM's first handshakes can exceed.
const handshakeTimeout = 5 * time.Second

// TLS is how a session reaches ZooKeeper's secureClientPort. With it,
// every connection is TLS from its first byte: the session has no
// plaintext dialer, so a failed handshake is a failed connection, retried
// over TLS, never a fallback.
type TLS struct {
	// Config returns the configuration of one handshake with host, the host
	// of a server as SessionConfig.Servers names it: the session never
	// resolves the names itself, so the name dialed is the name a
	// certificate is checked against.
	Config func(host string) *tls.Config
	// Check says which settings to look at when a handshake fails; errors
	// end with it.
	Check string
}

// dialer returns go-zookeeper's dialer for the session: raw (the TCP
// dialer) with a TLS handshake on every connection when t is set, and the
// last failure of either recorded in failures.
func (t *TLS) dialer(raw zk.Dialer, failures *lastFailure) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := raw(network, address, timeout)
		if err == nil && t != nil {
			conn, err = t.handshake(conn, address)
		}
		if err != nil {
			failures.record(err)
		}
		return conn, err
	}
}

// handshake runs the TLS handshake on raw, connected to address, within
// handshakeTimeout, and closes raw when it fails.
func (t *TLS) handshake(raw net.Conn, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("cluster: ZooKeeper server %q: %w", address, err)
	}
	conn := tls.Client(raw, t.Config(host))
	if err := raw.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		raw.Close()
		return nil, err
	}
	if err := conn.Handshake(); err != nil {
		raw.Close()
		return nil, fmt.Errorf("cluster: TLS handshake with ZooKeeper at %s failed: %w (%s)", address, err, t.Check)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// lastFailure keeps the last error of a connection attempt, for the error
// of a Connect that found no server: go-zookeeper only logs them.
type lastFailure struct {
	mu  sync.Mutex
	err error
}

func (f *lastFailure) record(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *lastFailure) last() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// namedHosts is a zk.HostProvider that keeps the servers as they are
// named, for TLS: go-zookeeper's default resolves them to addresses once,
// which would leave nothing but an IP to check a certificate against. The
// dialer resolves each name when it dials. The order is shuffled, as the
// default's is, so that clients spread over the servers.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	last    int
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(servers) == 0 {
		return fmt.Errorf("cluster: no ZooKeeper servers")
	}
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server was
// tried since the last connection (go-zookeeper then waits a second).
func (h *namedHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
