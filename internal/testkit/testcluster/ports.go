package testcluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Ports for servers that a test starts later (ZooKeeper, HDFS, daemons on
// fixed ports) are chosen below the kernel's ephemeral port range
// (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default). A port
// the kernel hands out for 127.0.0.1:0 comes from that range, and once its
// listener is closed the kernel may hand it out again at any moment as the
// source port of some outgoing connection: a CI run failed when a NameNode
// port chosen that way was taken, seconds later, by another connection, and
// the NameNode could not bind it ("Address already in use"). Below the range
// only a listener asking for that very port can take it.
const (
	lowestPort     = 20000 // ports below are left to well-known services
	portAttempts   = 100   // random picks per port before giving up
	portRangeFile  = "/proc/sys/net/ipv4/ip_local_port_range"
	portRangeLimit = 65536
)

// FreePorts returns n distinct loopback ports that were free a moment ago,
// below the ephemeral range (see above). It fails the test if it cannot find
// them.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return ports
}

// ClosedAddr returns "127.0.0.1:port" where nothing listens, for a test of
// a refused connection. The port is below the ephemeral range, so it cannot
// be the client's own source port (a TCP self-connect would answer).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return ClosedAddrs(t, 1)[0]
}

// ClosedAddrs returns n distinct addresses as ClosedAddr does.
func ClosedAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i, p := range FreePorts(t, n) {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs
}

// freePorts is FreePorts returning an error, for code that may not fail the
// test (outside its goroutine). Each port is verified free by listening on
// 127.0.0.1; the listeners are held until all n are chosen, so the ports
// differ. Where the ephemeral range cannot be read, the kernel picks (:0).
func freePorts(n int) ([]int, error) {
	low, err := ephemeralLow()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		var ln net.Listener
		var lerr error
		if err != nil || low <= lowestPort {
			ln, lerr = net.Listen("tcp", "127.0.0.1:0")
		} else {
			ln, lerr = listenBelow(low)
		}
		if lerr != nil {
			return nil, fmt.Errorf("free port: %w", lerr)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// listenBelow listens on a random port in [lowestPort, low).
func listenBelow(low int) (net.Listener, error) {
	var err error
	for range portAttempts {
		p := lowestPort + rand.IntN(low-lowestPort)
		var ln net.Listener
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			return ln, nil
		}
	}
	return nil, fmt.Errorf("none free of %d tried in [%d, %d): last %w", portAttempts, lowestPort, low, err)
}

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() (int, error) {
	b, err := os.ReadFile(portRangeFile)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, fmt.Errorf("%s: %q", portRangeFile, b)
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 0 || low >= portRangeLimit {
		return 0, errors.Join(fmt.Errorf("%s: bad low port %q", portRangeFile, fields[0]), err)
	}
	return low, nil
}
