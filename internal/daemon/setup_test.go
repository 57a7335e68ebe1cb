package daemon

import (
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/configs"
)

// A daemon with TLS on and no certificate of its own would fail every
// handshake it serves: Setup refuses it, naming the key, before anything
// starts. A client (configs.Validate alone) may go without one.
func TestSetupRefusesTLSWithoutACertificate(t *testing.T) {
	var stderr strings.Builder
	args := []string{"--" + configs.KeyTLSEnable, "--" + configs.KeyTLSTruststore + "=ca.pem"}
	if _, _, code, ok := Setup("nimbus", args, &stderr, configs.NimbusFlagKeys()); ok || code != 2 {
		t.Fatalf("Setup = code %d, ok %v; want 2 and refused", code, ok)
	}
	if got := stderr.String(); !strings.Contains(got, configs.KeyTLSCert+": must be set") {
		t.Errorf("stderr %q does not name %s", got, configs.KeyTLSCert)
	}
}

// An unknown code distributor is refused with the classes there are.
func TestSetupRefusesAnUnknownCodeDistributor(t *testing.T) {
	var stderr strings.Builder
	args := []string{"--" + configs.KeyCodeDistributorClass + "=s3"}
	if _, _, code, ok := Setup("supervisor", args, &stderr, configs.SupervisorFlagKeys()); ok || code != 2 {
		t.Fatalf("Setup = code %d, ok %v; want 2 and refused", code, ok)
	}
	if got := stderr.String(); !strings.Contains(got, `"s3" is not one of`) {
		t.Errorf("stderr %q does not name the classes", got)
	}
}
