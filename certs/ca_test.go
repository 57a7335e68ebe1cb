package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	ca, err := NewCA(dir, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ca.CertFile != filepath.Join(dir, "ca.pem") || ca.KeyFile != filepath.Join(dir, "ca-key.pem") {
		t.Errorf("files %s, %s", ca.CertFile, ca.KeyFile)
	}
	c := ca.Cert
	if !c.IsCA || c.KeyUsage&x509.KeyUsageCertSign == 0 || !strings.HasPrefix(c.Subject.CommonName, "Nimbus-HA CA ") {
		t.Errorf("CA certificate: IsCA %v, key usage %v, %s", c.IsCA, c.KeyUsage, c.Subject)
	}
	if life := c.NotAfter.Sub(time.Now()); life < DefaultCALifetime-time.Minute || life > DefaultCALifetime {
		t.Errorf("lifetime %v, want %v", life, DefaultCALifetime)
	}
	if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", c.PublicKey)
	}
	assertMode(t, ca.KeyFile, 0o600)

	loaded, err := LoadCA(ca.CertFile, ca.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Cert.Equal(ca.Cert) {
		t.Error("LoadCA read another certificate")
	}
	// Two CAs made without a name have different names.
	if other := newCA(t, ""); other.Cert.Subject.CommonName == c.Subject.CommonName {
		t.Errorf("two CAs named %s", c.Subject.CommonName)
	}
}

func TestNewCAOverwritesNothing(t *testing.T) {
	ca := newCA(t, "Test CA")
	before := readFile(t, ca.KeyFile)
	_, err := NewCA(filepath.Dir(ca.CertFile), "Test CA", 0)
	want := "certs: " + ca.KeyFile + " already exists; remove it first, or write elsewhere"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if !slices.Equal(readFile(t, ca.KeyFile), before) {
		t.Error("the CA's key was overwritten")
	}
}

func TestIssue(t *testing.T) {
	ca := newCA(t, "Test CA")
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		opts CertOptions
		eku  []x509.ExtKeyUsage
	}{
		{"server", CertOptions{Server: true, Hosts: []string{"nimbus-1.example", "127.0.0.1", "::1"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"alice", CertOptions{Client: true, Lifetime: time.Hour}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"both", CertOptions{Server: true, Client: true, Hosts: []string{"localhost"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ca.Issue(dir, tc.name, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.Files != (Files{Cert: filepath.Join(dir, tc.name+".pem"), Key: filepath.Join(dir, tc.name+"-key.pem"), Truststore: ca.CertFile}) {
				t.Errorf("files %+v", c.Files)
			}
			assertMode(t, c.Files.Key, 0o600)
			leaf := c.Leaf
			if leaf.Subject.CommonName != tc.name || leaf.IsCA || !slices.Equal(leaf.ExtKeyUsage, tc.eku) {
				t.Errorf("%s: IsCA %v, extended key usage %v, want %v", leaf.Subject, leaf.IsCA, leaf.ExtKeyUsage, tc.eku)
			}
			if got, want := names(leaf), tc.opts.Hosts; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("names %v, want %v", got, want)
			}
			if err := leaf.CheckSignatureFrom(ca.Cert); err != nil {
				t.Error(err)
			}
			want := tc.opts.Lifetime
			if want == 0 {
				want = DefaultCertLifetime
			}
			if life := leaf.NotAfter.Sub(leaf.NotBefore); life != want {
				t.Errorf("lifetime %v, want %v", life, want)
			}
		})
	}
}

func TestIssueIPAddressesAreIPSANs(t *testing.T) {
	c := issue(t, newCA(t, "Test CA"), "nimbus-1", CertOptions{Server: true, Hosts: []string{"127.0.0.1", "nimbus-1"}})
	if len(c.Leaf.IPAddresses) != 1 || !c.Leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || !slices.Equal(c.Leaf.DNSNames, []string{"nimbus-1"}) {
		t.Errorf("IP SANs %v, DNS SANs %v", c.Leaf.IPAddresses, c.Leaf.DNSNames)
	}
}

func TestIssueRefuses(t *testing.T) {
	ca := newCA(t, "Test CA")
	dir := t.TempDir()
	issue := func(name string, opts CertOptions) error { _, err := ca.Issue(dir, name, opts); return err }
	if err := issue("taken", clientOpts()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no role", issue("x", CertOptions{}), "certs: a certificate must be for a server, a client or both"},
		{"server without hosts", issue("x", CertOptions{Server: true}), "certs: a server certificate needs the host names or IP addresses it is for"},
		{"path in the name", issue("../x", clientOpts()), `certs: "../x" cannot name a certificate: it is also its file name`},
		{"empty name", issue("", clientOpts()), `certs: "" cannot name a certificate: it is also its file name`},
		{"outlives the CA", issue("x", CertOptions{Client: true, Lifetime: 2 * DefaultCALifetime}), "certs: the certificate would expire on "},
		{"exists", issue("taken", clientOpts()), "certs: " + filepath.Join(dir, "taken-key.pem") + " already exists; remove it first, or write elsewhere"},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.pem")); err == nil {
		t.Error("a refused certificate left a file")
	}
}

func TestLoadCARefuses(t *testing.T) {
	ca := newCA(t, "Test CA")
	c := issue(t, ca, "alice", clientOpts())
	other := newCA(t, "Other CA")
	missing := filepath.Join(t.TempDir(), "ca.pem")
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"not a CA", c.Files.Cert, c.Files.Key, "certs: " + c.Files.Cert + " (CN=alice) is not a CA certificate"},
		{"another CA's key", ca.CertFile, other.KeyFile, "certs: CA key " + other.KeyFile + " does not match CA certificate " + ca.CertFile + " (CN=Test CA)"},
		{"missing", missing, ca.KeyFile, "certs: CA certificate " + missing + " does not exist"},
	} {
		_, err := LoadCA(tc.cert, tc.key)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}
