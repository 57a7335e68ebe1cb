package depose

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Evidence is what one probe of a leader's address proves.
type Evidence int

const (
	// Unknown: nothing either way (a timeout, an unreachable host or
	// network, a name that does not resolve). Deposes nothing.
	Unknown Evidence = iota
	// Alive: something accepted the connection (a live or stopped
	// process, or a new one on the port).
	Alive
	// Dead: the leader's host refused the connection: no process
	// listens on the leader's port.
	Dead
)

func (e Evidence) String() string {
	return [...]string{"unknown", "alive", "connection refused"}[e]
}

// Probe dials addr once, within timeout, and says what that proves.
func Probe(ctx context.Context, addr string, timeout time.Duration) Evidence {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	switch {
	case err == nil:
		conn.Close()
		return Alive
	case errors.Is(err, syscall.ECONNREFUSED):
		return Dead
	}
	return Unknown
}
