package certs

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadRefusesMaterialThatCannotWork(t *testing.T) {
	ca := newCA(t, "Test CA")
	good := issue(t, ca, "nimbus-1", serverOpts())
	other := issue(t, ca, "nimbus-2", serverOpts())
	old := issue(t, ca, "old", expired())
	future := issue(t, ca, "future", CertOptions{Client: true, NotBefore: time.Now().Add(time.Hour), Lifetime: time.Hour})
	missing := filepath.Join(t.TempDir(), "missing.pem")
	notPEM := writeFile(t, "cert.pem", []byte("hello\n"))
	empty := writeFile(t, "ca.pem", nil)
	with := func(f func(*Files)) Files { fs := good.Files; f(&fs); return fs }

	for _, tc := range []struct {
		name  string
		files Files
		want  string
	}{
		{"missing certificate", with(func(f *Files) { f.Cert = missing }),
			"certs: certificate " + missing + " (nimbus.grpc.tls.cert.path) does not exist"},
		{"missing key", with(func(f *Files) { f.Key = missing }),
			"certs: key " + missing + " (nimbus.grpc.tls.key.path) does not exist"},
		{"missing CA bundle", with(func(f *Files) { f.Truststore = missing }),
			"certs: CA bundle " + missing + " (nimbus.grpc.tls.truststore.path) does not exist"},
		{"certificate not PEM", with(func(f *Files) { f.Cert = notPEM }),
			"certs: certificate " + notPEM + " (nimbus.grpc.tls.cert.path) is not PEM (no -----BEGIN line)"},
		{"paths swapped", with(func(f *Files) { f.Cert, f.Key = good.Key, good.Files.Cert }),
			"certs: certificate " + good.Key + " (nimbus.grpc.tls.cert.path) has no certificates (it holds PRIVATE KEY)"},
		{"key not a key", with(func(f *Files) { f.Key = good.Files.Cert }),
			"certs: key " + good.Files.Cert + " (nimbus.grpc.tls.key.path) has no private key (it holds CERTIFICATE)"},
		{"key of another certificate", with(func(f *Files) { f.Key = other.Key }),
			"certs: key " + other.Key + " does not match certificate " + good.Files.Cert + " (CN=nimbus-1)"},
		{"expired", old.Files,
			"certs: certificate " + old.Files.Cert + " (CN=old) expired on " + date(old.Leaf.NotAfter)},
		{"not valid yet", future.Files,
			"certs: certificate " + future.Files.Cert + " (CN=future) is not valid until " + date(future.Leaf.NotBefore) + " (is a clock wrong?)"},
		{"CA bundle empty", with(func(f *Files) { f.Truststore = empty }),
			"certs: CA bundle " + empty + " (nimbus.grpc.tls.truststore.path) is not PEM (no -----BEGIN line)"},
		{"CA bundle without certificates", with(func(f *Files) { f.Truststore = good.Key }),
			"certs: CA bundle " + good.Key + " (nimbus.grpc.tls.truststore.path) has no certificates (it holds PRIVATE KEY)"},
		{"no CA bundle", with(func(f *Files) { f.Truststore = "" }),
			"certs: no CA bundle: nimbus.grpc.tls.truststore.path names the CA certificates that verify peers"},
		{"certificate without key", with(func(f *Files) { f.Key = "" }),
			"certs: nimbus.grpc.tls.cert.path and nimbus.grpc.tls.key.path go together: give both or neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Load(tc.files, slog.New(slog.DiscardHandler))
			if err == nil {
				t.Fatalf("Load succeeded with %+v", tc.files)
			}
			if r != nil {
				t.Error("Load returned a Reloader with its error")
			}
			if err.Error() != tc.want {
				t.Errorf("error\n %q\nwant\n %q", err, tc.want)
			}
		})
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	ca := newCA(t, "Test CA")
	c := issue(t, ca, "nimbus-1", serverOpts())
	if err := os.Chmod(c.Files.Key, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Load(c.Files, slog.New(slog.DiscardHandler))
	want := "certs: cannot read key " + c.Files.Key + " (nimbus.grpc.tls.key.path): permission denied"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestLoadLogsTheCertificate(t *testing.T) {
	ca := newCA(t, "Test CA")
	c := issue(t, ca, "nimbus-1", serverOpts())
	logger, logs := newLogger()
	r := mustLoad(t, c.Files, logger)
	if got := r.Certificate(); got == nil || !got.Equal(c.Leaf) {
		t.Errorf("Certificate() = %v, want the issued one", got)
	}
	if l := logs.lines(`msg="loaded TLS material"`, `subject="CN=nimbus-1"`, `not_after="`+date(c.Leaf.NotAfter)+`"`, "cas=1", "component=certs"); len(l) != 1 {
		t.Errorf("want one line saying what was loaded, got:\n%s", logs)
	}
	if l := logs.lines("level=WARN"); len(l) != 0 {
		t.Errorf("unexpected warning: %v", l)
	}
}

func TestLoadWarnsOfACertificateItsTruststoreRefuses(t *testing.T) {
	c := issue(t, newCA(t, "CA One"), "nimbus-1", serverOpts())
	other := newCA(t, "CA Two")
	logger, logs := newLogger()
	files := c.Files
	files.Truststore = other.CertFile
	mustLoad(t, files, logger)
	want := "certificate " + c.Files.Cert + " (issued by CN=CA One) is not signed by a CA in " + other.CertFile
	if l := logs.lines("level=WARN", "peers that share this truststore will refuse", want); len(l) != 1 {
		t.Errorf("want a warning containing %q, got:\n%s", want, logs)
	}
}

func TestLoadClientWithoutCertificate(t *testing.T) {
	ca := newCA(t, "Test CA")
	r := mustLoad(t, Files{Truststore: ca.CertFile}, slog.New(slog.DiscardHandler))
	if c := r.Certificate(); c != nil {
		t.Errorf("Certificate() = %v, want nil", c.Subject)
	}
}

func TestLoadChainAndCombinedFile(t *testing.T) {
	ca := newCA(t, "Test CA")
	c := issue(t, ca, "nimbus-1", serverOpts())
	// A file with the key and the certificate followed by the CA (a
	// chain), given as both paths.
	var data []byte
	for _, p := range []string{c.Files.Key, c.Files.Cert, ca.CertFile} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	combined := writeFile(t, "combined.pem", data)
	r := mustLoad(t, Files{Cert: combined, Key: combined, Truststore: ca.CertFile}, slog.New(slog.DiscardHandler))
	m := r.current()
	if len(m.cert.Certificate) != 2 || !m.leaf.Equal(c.Leaf) {
		t.Errorf("loaded %d certificates, leaf %s; want 2, leaf CN=nimbus-1", len(m.cert.Certificate), subject(m.leaf))
	}
	if !strings.HasPrefix(subject(m.leaf), "CN=nimbus-1") {
		t.Errorf("leaf %s", subject(m.leaf))
	}
}
