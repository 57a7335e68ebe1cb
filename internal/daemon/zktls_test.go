package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/configs"
)

// TLS material for ZooKeeper that cannot be used stops the daemon before
// it starts, naming the key: a keystore that does not exist, a truststore
// that holds no certificate.
func TestSetupRefusesUnusableZooKeeperTLS(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	ca, err := certs.NewCA(filepath.Join(dir, "ca"), "zookeeper-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not-pem.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key string
		args      []string
	}{
		{"keystore missing", configs.KeyZKSSLKeystore, []string{"--" + configs.KeyZKSSLKeystore + "=" + filepath.Join(dir, "missing.pem"),
			"--" + configs.KeyZKSSLTruststore + "=" + ca.CertFile}},
		{"truststore not PEM", configs.KeyZKSSLTruststore, []string{"--" + configs.KeyZKSSLTruststore + "=" + notPEM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"nimbus", "supervisor"} {
				_, stderr, code, ok := setup(t, name, append([]string{"--" + configs.KeyZKSSLEnable}, tc.args...)...)
				if ok || code != ExitUsage || !strings.Contains(stderr, tc.key) {
					t.Errorf("%s: Setup = ok %v, code %d, stderr %q; want exit %d naming %s", name, ok, code, stderr, ExitUsage, tc.key)
				}
			}
		})
	}
}
