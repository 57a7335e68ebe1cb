package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"time"
)

// Lifetimes of what NewCA and Issue make, unless told otherwise. They are
// short on purpose: the CA is a throwaway, and certificates are meant to be
// rotated.
const (
	DefaultCALifetime   = 365 * 24 * time.Hour
	DefaultCertLifetime = 90 * 24 * time.Hour
)

// backdate is how far before now a certificate becomes valid, so that a peer
// whose clock is a little behind does not find it not valid yet.
const backdate = time.Minute

// The files NewCA writes in its directory.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
)

// CA is a certificate authority that issues certificates from its key: the
// throwaway CA of tests and the quickstart.
type CA struct {
	Cert     *x509.Certificate
	CertFile string // PEM: the CA certificate, every process's truststore
	KeyFile  string // PEM: its private key
	key      crypto.Signer
}

// NewCA makes a CA named name (a name with a random suffix if empty), valid
// for lifetime (DefaultCALifetime if 0), and writes ca.pem and ca-key.pem
// (mode 0600) in dir, which it creates if need be. It overwrites nothing.
func NewCA(dir, name string, lifetime time.Duration) (*CA, error) {
	if lifetime <= 0 {
		lifetime = DefaultCALifetime
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate the CA's key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	if name == "" {
		id := serial.Text(16)
		name = "Nimbus-HA CA " + id[:min(len(id), 8)]
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // it signs certificates, not other CAs
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: make the CA certificate: %w", err)
	}
	ca := &CA{CertFile: filepath.Join(dir, CACertFile), KeyFile: filepath.Join(dir, CAKeyFile), key: key}
	if ca.Cert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	if err := writePair(dir, ca.CertFile, der, ca.KeyFile, key); err != nil {
		return nil, err
	}
	return ca, nil
}

// LoadCA reads a CA that NewCA (or anyone) made: its certificate and key.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certs, err := source{what: "CA certificate", path: certFile}.certificates()
	if err != nil {
		return nil, err
	}
	cert := certs[0]
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("certs: %s (%s) is not a CA certificate", certFile, subject(cert))
	}
	key, err := source{what: "CA key", path: keyFile}.privateKey()
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("certs: CA key %s does not match CA certificate %s (%s)", keyFile, certFile, subject(cert))
	}
	if err := validAt(cert, time.Now()); err != nil {
		return nil, fmt.Errorf("certs: CA certificate %s (%s) %w", certFile, subject(cert), err)
	}
	return &CA{Cert: cert, CertFile: certFile, KeyFile: keyFile, key: key}, nil
}

// CertOptions say what a certificate Issue makes is for.
type CertOptions struct {
	Server bool     // for TLS servers (serverAuth); needs Hosts
	Client bool     // for TLS clients (clientAuth); its common name is the principal
	Hosts  []string // DNS names and IP literals the certificate is for (its SANs)
	// Lifetime is how long it is valid from NotBefore; DefaultCertLifetime
	// if 0.
	Lifetime time.Duration
	// NotBefore is when it becomes valid; a minute ago if zero. A time in
	// the past with a short Lifetime makes an expired certificate, one in
	// the future a certificate not valid yet (for tests).
	NotBefore time.Time
}

// Issued is a certificate Issue made and the files it wrote: Cert and Key,
// and Truststore, the CA's certificate, ready for Load.
type Issued struct {
	Files
	Leaf *x509.Certificate // the certificate
}

// Issue makes an ECDSA P-256 key and a certificate for it named name (its
// common name), signed by ca, and writes <name>.pem and <name>-key.pem
// (mode 0600) in dir, which it creates if need be. It overwrites nothing.
func (ca *CA) Issue(dir, name string, opts CertOptions) (*Issued, error) {
	tmpl, err := ca.template(name, opts)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate a key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("certs: sign the certificate of %s: %w", name, err)
	}
	out := &Issued{Files: Files{
		Cert:       filepath.Join(dir, name+".pem"),
		Key:        filepath.Join(dir, name+"-key.pem"),
		Truststore: ca.CertFile,
	}}
	if out.Leaf, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	if err := writePair(dir, out.Files.Cert, der, out.Files.Key, key); err != nil {
		return nil, err
	}
	return out, nil
}

// template is the certificate Issue signs, or why opts cannot make one.
func (ca *CA) template(name string, opts CertOptions) (*x509.Certificate, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("certs: %q cannot name a certificate: it is also its file name", name)
	}
	if !opts.Server && !opts.Client {
		return nil, errors.New("certs: a certificate must be for a server, a client or both")
	}
	if opts.Server && len(opts.Hosts) == 0 {
		return nil, errors.New("certs: a server certificate needs the host names or IP addresses it is for")
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             opts.NotBefore,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-backdate)
	}
	lifetime := opts.Lifetime
	if lifetime <= 0 {
		lifetime = DefaultCertLifetime
	}
	tmpl.NotAfter = tmpl.NotBefore.Add(lifetime)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("certs: the certificate would expire on %s, after its CA %s (%s): make a new CA or a shorter lifetime",
			date(tmpl.NotAfter), subject(ca.Cert), date(ca.Cert.NotAfter))
	}
	if opts.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if opts.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range opts.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl, nil
}

// serialNumber is a random 128-bit serial number.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: make a serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never 0
}
