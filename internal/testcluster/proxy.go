package testcluster

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to one upstream address until it is cut.
// A daemon given proxies instead of the real addresses can be taken off
// the network (a nimbus off ZooKeeper) while everything else stays
// connected: Cutter does the same for connections made in-process.
//
// Cut closes the connections, as a crashed peer or a firewall's reset
// would. Drop black-holes one direction, or both, as a partition does:
// the connections stay open, bytes sent the dropped way are read and
// thrown away, and neither side is told.
type Proxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup // the accept loop and every forwarding

	mu    sync.Mutex
	cut   bool
	drop  [2]bool // by Direction: bytes that way are thrown away
	conns map[net.Conn]struct{}
}

// Direction is one way through a Proxy.
type Direction int

const (
	// ToUpstream is from the daemon that dialled the proxy to the upstream
	// server (a client's requests).
	ToUpstream Direction = iota
	// FromUpstream is from the upstream server back to the daemon (the
	// server's answers).
	FromUpstream
)

func (d Direction) String() string {
	if d == ToUpstream {
		return "to upstream"
	}
	return "from upstream"
}

// StartProxy listens on a free loopback port and forwards to upstream; it
// closes at t.Cleanup.
func StartProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testcluster: proxy: %v", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is the address to give the daemon instead of upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every forwarded connection; new ones are closed at once
// until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Drop black-holes the given directions (both, when none is given) on
// every connection, open or new, until Restore: bytes sent that way are
// read and thrown away, and the connections stay open. Dropping one
// direction makes an asymmetric partition: a server still hears a client
// that hears nothing, or the other way round.
func (p *Proxy) Drop(dirs ...Direction) {
	if len(dirs) == 0 {
		dirs = []Direction{ToUpstream, FromUpstream}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range dirs {
		p.drop[d] = true
	}
}

// Restore lets connections through again, both ways: new ones after a
// Cut, every byte after a Drop.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.drop = [2]bool{}
	p.mu.Unlock()
}

func (p *Proxy) dropping(d Direction) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drop[d]
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.forward(down) })
	}
}

// forward copies both ways until either side closes or the proxy is cut.
func (p *Proxy) forward(down net.Conn) {
	up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		down.Close()
		return
	}
	if !p.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, d Direction) {
		_ = p.copy(dst, src, d)
		done <- struct{}{}
	}
	go pipe(up, down, ToUpstream)
	go pipe(down, up, FromUpstream)
	<-done // one direction ended: end both
	down.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, down)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// copy copies src to dst, throwing away what arrives while d is dropped,
// until either side fails.
func (p *Proxy) copy(dst, src net.Conn, d Direction) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.dropping(d) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
