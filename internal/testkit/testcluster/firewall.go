package testcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// loopback is every address a loopback connection may go to.
const loopback = "127.0.0.0/8"

// RejectPortAvailable says why RejectPort cannot run here, or nil if it
// can: it needs root, iptables(8) that may read the rules (a container
// without NET_ADMIN may not) and ss(8); make test-deps installs both.
func RejectPortAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("testcluster: RejectPort needs root (iptables)")
	}
	for _, tool := range []string{"iptables", "ss"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("testcluster: RejectPort needs %s: %w", tool, err)
		}
	}
	if out, err := exec.Command("iptables", "-L", "INPUT", "-n").CombinedOutput(); err != nil {
		return fmt.Errorf("testcluster: RejectPort: iptables -L: %v: %s", err, out)
	}
	return nil
}

// RejectPort makes the firewall answer every packet to port on loopback
// with a TCP reset, as `iptables -j REJECT --reject-with tcp-reset` does,
// so that connections to it are refused while its process runs on, and
// kills the connections already open to it (ss -K). Loopback is all of
// 127.0.0.0/8, not only 127.0.0.1: daemons on a PeerNet dial each other
// at addresses of their own there. The rule goes at the end of the test,
// or when the returned function is called.
func RejectPort(t testing.TB, port int) (restore func()) {
	t.Helper()
	rule := []string{"INPUT", "-p", "tcp", "-d", loopback, "--dport", strconv.Itoa(port), "-j", "REJECT", "--reject-with", "tcp-reset"}
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
	if out, err := exec.Command("ss", "-K", "dst", loopback, "dport", "=", strconv.Itoa(port)).CombinedOutput(); err != nil {
		t.Fatalf("testcluster: ss -K: %v: %s", err, out)
	}
	return restore
}
