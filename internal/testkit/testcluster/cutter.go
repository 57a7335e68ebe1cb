package testcluster

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Cutter is a dialer for a ZooKeeper client that a test can cut off the
// network: Cut closes every connection it made and refuses new ones until
// Restore. Cut for longer than the session timeout, the server expires the
// session, as it would for a partitioned or paused process.
type Cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

// NewCutter returns a Cutter that lets connections through.
func NewCutter() *Cutter { return &Cutter{} }

// Dial has the signature of zk.Dialer.
func (c *Cutter) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("testcluster: network cut")
	}
	conn, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	c.conns = append(c.conns, conn)
	return conn, nil
}

// Cut closes every connection and refuses new ones.
func (c *Cutter) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// Restore lets connections through again.
func (c *Cutter) Restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = false
}
