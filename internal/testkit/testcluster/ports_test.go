package testcluster

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreDistinctAndBelowTheEphemeralRange(t *testing.T) {
	low, err := ephemeralLow()
	if err != nil {
		t.Fatalf("the ephemeral range: %v", err)
	}
	seen := map[int]bool{}
	for _, p := range FreePorts(t, 50) {
		if p < lowestPort || p >= low {
			t.Errorf("port %d is not in [%d, %d)", p, lowestPort, low)
		}
		if seen[p] {
			t.Errorf("port %d chosen twice", p)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		ln.Close()
	}
}

func TestClosedAddrRefuses(t *testing.T) {
	for _, addr := range ClosedAddrs(t, 3) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			t.Errorf("%s accepted a connection", addr)
		}
	}
}
