package certs

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// material is one consistent load of Files: what a handshake uses. It is
// never modified once loaded, so handshakes share it without locks.
type material struct {
	files Files
	cert  *tls.Certificate  // nil when the process has no certificate
	leaf  *x509.Certificate // cert's first certificate
	pool  *x509.CertPool    // the truststore
	cas   []*x509.Certificate
}

// The files as errors name them.
func (f Files) certSource() source {
	return source{what: "certificate", path: f.Cert, setting: f.settings().Cert}
}

func (f Files) keySource() source {
	return source{what: "key", path: f.Key, setting: f.settings().Key}
}

func (f Files) truststoreSource() source {
	return source{what: "CA bundle", path: f.Truststore, setting: f.settings().Truststore}
}

// load reads and checks f as of now.
func load(f Files, now time.Time) (*material, error) {
	if f.Truststore == "" {
		return nil, fmt.Errorf("certs: no CA bundle: %s names the CA certificates that verify peers", f.settings().Truststore)
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("certs: %s and %s go together: give both or neither", f.settings().Cert, f.settings().Key)
	}
	cas, err := f.truststoreSource().certificates()
	if err != nil {
		return nil, err
	}
	m := &material{files: f, pool: x509.NewCertPool(), cas: cas}
	for _, c := range cas {
		m.pool.AddCert(c)
	}
	if f.Cert == "" {
		return m, nil
	}
	if m.cert, err = loadKeyPair(f, now); err != nil {
		return nil, err
	}
	m.leaf = m.cert.Leaf
	return m, nil
}

// loadKeyPair reads the certificate chain and its key, and checks that they
// belong together and that the certificate is valid now.
func loadKeyPair(f Files, now time.Time) (*tls.Certificate, error) {
	src := f.certSource()
	chain, err := src.certificates()
	if err != nil {
		return nil, err
	}
	key, err := f.keySource().privateKey()
	if err != nil {
		return nil, err
	}
	leaf := chain[0]
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return nil, fmt.Errorf("certs: key %s does not match certificate %s (%s)", f.Key, f.Cert, subject(leaf))
	}
	if err := validAt(leaf, now); err != nil {
		return nil, fmt.Errorf("certs: certificate %s (%s) %w", f.Cert, subject(leaf), err)
	}
	cert := &tls.Certificate{PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// validAt says, as the end of a sentence about c, why c is not valid at now.
func validAt(c *x509.Certificate, now time.Time) error {
	switch {
	case now.Before(c.NotBefore):
		return fmt.Errorf("is not valid until %s (is a clock wrong?)", date(c.NotBefore))
	case now.After(c.NotAfter):
		return fmt.Errorf("expired on %s", date(c.NotAfter))
	}
	return nil
}

// trusted reports why m's own certificate would not verify against m's own
// truststore, which is usually a wrong CA file: peers that share the
// truststore will refuse the certificate. Nil when it verifies.
func (m *material) trusted(now time.Time) error {
	if m.cert == nil {
		return nil
	}
	inter := x509.NewCertPool()
	for _, der := range m.cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	_, err := m.leaf.Verify(x509.VerifyOptions{
		Roots: m.pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return fmt.Errorf("certificate %s (issued by %s) is not signed by a CA in %s", m.files.Cert, m.leaf.Issuer, m.files.Truststore)
	}
	return err
}

// subject names a certificate by its subject ("CN=nimbus-1").
func subject(c *x509.Certificate) string {
	if s := c.Subject.String(); s != "" {
		return s
	}
	return "no subject"
}

// date is how errors and logs write a certificate's validity bounds.
func date(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") }
