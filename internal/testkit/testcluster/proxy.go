package testcluster

import (
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
// would. Drop holds one direction, or both, as a partition does: the
// connections stay open, nothing sent the held way arrives, neither side
// is told, and when the partition heals (Restore) the held bytes arrive,
// in order, as TCP's retransmissions would deliver them. No byte is ever
// lost on a connection that stays open.
type Proxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup // the accept loop and every forward

	mu    sync.Mutex
	cut   bool
	held  [2]chan struct{} // by Direction: open while held, closed by Restore
	links map[*link]struct{}
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
	p := &Proxy{ln: ln, upstream: upstream, links: map[*link]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is the address to give the daemon instead of upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every forwarded connection, held bytes and all; new ones are
// closed at once until Restore. It does not wait for the forwarding to
// end.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for l := range p.links {
		l.close()
	}
}

// Drop holds the given directions (both, when none is given) on every
// connection, open or new, until Restore, and returns at once. The proxy
// stops reading what is sent a held way: those bytes wait in the socket
// buffers (and in at most one buffer of the proxy's), TCP's flow control
// stops the sender once they are full, and Restore delivers them in
// order. The connections stay open and neither side is told; a connection
// opened while requests are held reaches the upstream server only when
// they pass. Holding one direction makes an asymmetric partition: a server
// still hears a client that hears nothing, or the other way round.
func (p *Proxy) Drop(dirs ...Direction) {
	if len(dirs) == 0 {
		dirs = []Direction{ToUpstream, FromUpstream}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range dirs {
		if p.held[d] == nil {
			p.held[d] = make(chan struct{})
		}
	}
}

// Restore lets connections through again, both ways: new ones after a
// Cut; after a Drop, the held bytes, in order, and all that follow. It
// returns at once, without waiting for the held bytes to be delivered.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for d, ch := range p.held {
		if ch != nil {
			close(ch)
			p.held[d] = nil
		}
	}
}

// pass blocks while d is held; it returns false if l closed first.
func (p *Proxy) pass(l *link, d Direction) bool {
	for {
		p.mu.Lock()
		held := p.held[d]
		p.mu.Unlock()
		if held == nil {
			return true
		}
		select {
		case <-held: // restored; look again, it may be held anew
		case <-l.done:
			return false
		}
	}
}

// close stops accepting, closes every connection and returns once every
// goroutine of the proxy has ended (a held one included).
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

// forward dials upstream and copies both ways until either side closes
// or the proxy is cut; it owns the two copying goroutines and returns when
// both have ended.
func (p *Proxy) forward(down net.Conn) {
	l := &link{down: down, done: make(chan struct{})}
	if !p.track(l) {
		down.Close()
		return
	}
	defer p.untrack(l)
	defer l.close()
	// Like its requests, the connection reaches the server only when
	// they pass: a server that saw it open without a word might close it.
	if !p.pass(l, ToUpstream) {
		return
	}
	up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		return
	}
	if !l.attach(up) {
		return // cut while dialling
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		p.copy(l, up, down, ToUpstream)
		l.close() // one direction ended: end both
	})
	wg.Go(func() {
		p.copy(l, down, up, FromUpstream)
		l.close()
	})
	wg.Wait()
}

func (p *Proxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) untrack(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// copy copies src to dst, the way d, until either side fails or l closes.
// While d is held it reads nothing more from src and keeps what it has
// read until d passes again.
func (p *Proxy) copy(l *link, dst, src net.Conn, d Direction) {
	buf := make([]byte, 32<<10)
	for p.pass(l, d) {
		n, err := src.Read(buf)
		if n > 0 {
			// Read may have returned after a Drop: what it read is held too.
			if !p.pass(l, d) {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed connection
		}
	}
}

// link is one forwarded connection: the daemon's (down) and, once dialled,
// the upstream server's (up).
type link struct {
	down net.Conn
	done chan struct{} // closed by close: wakes a copy waiting to pass

	mu     sync.Mutex
	up     net.Conn
	closed bool
}

// attach sets up, or closes it and returns false if l has closed.
func (l *link) attach(up net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		up.Close()
		return false
	}
	l.up = up
	return true
}

// close closes both connections and wakes whatever waits on l; it may be
// called more than once, from any goroutine.
func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	l.down.Close()
	if l.up != nil {
		l.up.Close()
	}
}
