package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Why a peer's certificate was refused, for errors.Is. The errors say more,
// in words an operator can act on.
var (
	ErrUntrusted   = errors.New("certs: certificate not signed by a CA in the truststore")
	ErrExpired     = errors.New("certs: certificate expired")
	ErrNotYetValid = errors.New("certs: certificate not valid yet")
	ErrWrongName   = errors.New("certs: certificate for other names")
	ErrWrongUsage  = errors.New("certs: certificate not for this use")
)

// refusal is a refused certificate: its text says what to fix, and it wraps
// one of the sentinels above and what crypto/x509 said, if anything.
type refusal struct {
	reason error
	cause  error
	msg    string
}

func (e *refusal) Error() string { return e.msg }

func (e *refusal) Unwrap() []error {
	if e.cause == nil {
		return []error{e.reason}
	}
	return []error{e.reason, e.cause}
}

// peer is the other end of a handshake, as messages name it.
type peer struct {
	role string // "server" or "client"
	host string // the name a client dialed, for a server
}

// the names a certificate of the peer at the start of a sentence.
func (p peer) the(c *x509.Certificate) string {
	if p.role == "server" {
		return "the certificate of " + p.host
	}
	return fmt.Sprintf("the client's certificate (%s)", subject(c))
}

// verifyServer checks, for a client that dialed host (cs.ServerName if
// empty), the certificates the server presented.
func verifyServer(m *material, host string, cs tls.ConnectionState, now time.Time) error {
	if host == "" {
		host = cs.ServerName
	}
	if host == "" {
		return errors.New("certs: no server name to check the server's certificate against (dial with ClientCredentials, or give ClientConfig the host)")
	}
	if err := verifyChain(peer{role: "server", host: host}, m, cs.PeerCertificates, x509.ExtKeyUsageServerAuth, now); err != nil {
		return err
	}
	leaf := cs.PeerCertificates[0]
	if err := leaf.VerifyHostname(host); err != nil {
		msg := fmt.Sprintf("the certificate of %s is for [%s], not %s", host, strings.Join(names(leaf), " "), host)
		return &refusal{reason: ErrWrongName, cause: err, msg: msg}
	}
	return nil
}

// verifyClient checks, for a server that requires one, a client's
// certificates.
func verifyClient(m *material, cs tls.ConnectionState, now time.Time) error {
	return verifyChain(peer{role: "client"}, m, cs.PeerCertificates, x509.ExtKeyUsageClientAuth, now)
}

// verifyChain checks that chain (the peer's certificate first) is valid now,
// for usage, and signed by a CA in m's truststore.
func verifyChain(p peer, m *material, chain []*x509.Certificate, usage x509.ExtKeyUsage, now time.Time) error {
	if len(chain) == 0 {
		return &refusal{reason: ErrUntrusted, msg: fmt.Sprintf("the %s sent no certificate", p.role)}
	}
	leaf := chain[0]
	if err := validAt(leaf, now); err != nil {
		return &refusal{reason: timeReason(leaf, now), msg: p.the(leaf) + " " + err.Error()}
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: m.pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage},
	})
	if err == nil {
		return nil
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		return p.untrusted(m, chain, err, now)
	case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
		msg := fmt.Sprintf("%s is not a %s certificate (its extended key usage is %s)", p.the(leaf), p.role, usages(leaf))
		return &refusal{reason: ErrWrongUsage, cause: err, msg: msg}
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired && validAt(invalid.Cert, now) != nil:
		if slices.ContainsFunc(m.cas, invalid.Cert.Equal) {
			return p.signedBy(m, leaf, invalid.Cert, err, now)
		}
		msg := fmt.Sprintf("%s was issued by %s, which %v", p.the(leaf), subject(invalid.Cert), validAt(invalid.Cert, now))
		return &refusal{reason: timeReason(invalid.Cert, now), cause: err, msg: msg}
	}
	return &refusal{reason: ErrUntrusted, cause: err, msg: fmt.Sprintf("%s was refused: %v", p.the(leaf), err)}
}

// untrusted explains a chain that leads to no CA of the truststore. A CA
// there that signed the chain must be expired or unable to sign; one with
// the issuer's name but another key is a CA made again under the same name.
func (p peer) untrusted(m *material, chain []*x509.Certificate, err error, now time.Time) error {
	leaf, top := chain[0], chain[len(chain)-1]
	var signer, namesake *x509.Certificate
	for _, ca := range m.cas {
		if !bytes.Equal(ca.RawSubject, top.RawIssuer) {
			continue
		}
		namesake = ca
		// The signature alone: CheckSignatureFrom would also refuse a CA
		// that cannot sign, which is worth saying apart.
		if ca.CheckSignature(top.SignatureAlgorithm, top.RawTBSCertificate, top.Signature) == nil {
			signer = ca
			break
		}
	}
	if signer != nil {
		return p.signedBy(m, leaf, signer, err, now)
	}
	msg := fmt.Sprintf("the %s's certificate (%s, issued by %s) is not signed by a CA in %s",
		p.role, subject(leaf), leaf.Issuer, m.files.Truststore)
	if namesake != nil {
		msg += fmt.Sprintf(" (that file has a CA named %s, but another one: was the CA made again?)", subject(namesake))
	}
	return &refusal{reason: ErrUntrusted, cause: err, msg: msg}
}

// signedBy explains a chain that ca, in the truststore, signed, but which
// did not verify: ca is expired or not valid yet, or cannot sign.
func (p peer) signedBy(m *material, leaf, ca *x509.Certificate, err error, now time.Time) error {
	msg := fmt.Sprintf("the %s's certificate (%s) is signed by CA %s in %s, which ", p.role, subject(leaf), subject(ca), m.files.Truststore)
	if invalid := validAt(ca, now); invalid != nil {
		return &refusal{reason: timeReason(ca, now), cause: err, msg: msg + invalid.Error()}
	}
	return &refusal{reason: ErrUntrusted, cause: err, msg: msg + "cannot be used: " + err.Error()}
}

// timeReason is ErrNotYetValid or ErrExpired, for a certificate not valid
// at now.
func timeReason(c *x509.Certificate, now time.Time) error {
	if now.Before(c.NotBefore) {
		return ErrNotYetValid
	}
	return ErrExpired
}

// names lists the names a certificate is for: its DNS and IP subject
// alternative names.
func names(c *x509.Certificate) []string {
	out := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// usages names a certificate's extended key usages as RFC 5280 does.
func usages(c *x509.Certificate) string {
	if len(c.ExtKeyUsage) == 0 {
		return "unset"
	}
	out := make([]string, len(c.ExtKeyUsage))
	for i, u := range c.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			out[i] = "serverAuth"
		case x509.ExtKeyUsageClientAuth:
			out[i] = "clientAuth"
		case x509.ExtKeyUsageCodeSigning:
			out[i] = "codeSigning"
		case x509.ExtKeyUsageEmailProtection:
			out[i] = "emailProtection"
		default:
			out[i] = fmt.Sprintf("usage %d", u)
		}
	}
	return strings.Join(out, ", ")
}
