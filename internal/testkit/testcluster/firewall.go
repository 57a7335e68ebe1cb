package testcluster

import (
	"os/exec"
	"strconv"
	"testing"
)

// RejectPort makes the firewall answer every packet to port on loopback
// with a TCP reset, as `iptables -j REJECT --reject-with tcp-reset` does,
// so that connections to it are refused while its process runs on, and
// kills the connections already open to it (ss -K). The rule goes at the
// end of the test, or when the returned function is called.
func RejectPort(t testing.TB, port int) (restore func()) {
	t.Helper()
	rule := []string{"INPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", strconv.Itoa(port), "-j", "REJECT", "--reject-with", "tcp-reset"}
	if out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("testcluster: iptables (make test-deps installs it): %v: %s", err, out)
	}
	removed := false
	restore = func() {
		if !removed {
			removed = true
			_ = exec.Command("iptables", append([]string{"-D"}, rule...)...).Run()
		}
	}
	t.Cleanup(restore)
	if out, err := exec.Command("ss", "-K", "dst", "127.0.0.1", "dport", "=", strconv.Itoa(port)).CombinedOutput(); err != nil {
		t.Fatalf("testcluster: ss -K: %v: %s", err, out)
	}
	return restore
}
