package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/configs"
)

// PrincipalOf names the principal a verified certificate identifies, by
// field, a value of nimbus.grpc.tls.principal: the subject's common name,
// or the first e-mail, DNS or URI subject alternative name. A certificate
// without that field names no one: an error wrapping
// apierr.ErrUnauthenticated.
func PrincipalOf(cert *x509.Certificate, field string) (string, error) {
	var p string
	switch field {
	case configs.PrincipalCN:
		p = cert.Subject.CommonName
	case configs.PrincipalSANEmail:
		if len(cert.EmailAddresses) > 0 {
			p = cert.EmailAddresses[0]
		}
	case configs.PrincipalSANDNS:
		if len(cert.DNSNames) > 0 {
			p = cert.DNSNames[0]
		}
	case configs.PrincipalSANURI:
		if len(cert.URIs) > 0 {
			p = cert.URIs[0].String()
		}
	default:
		return "", checkField(field)
	}
	if p == "" {
		return "", fmt.Errorf("%w: the client certificate (subject %q) has no %s to name its principal (%s)",
			apierr.ErrUnauthenticated, cert.Subject.String(), field, configs.KeyTLSPrincipal)
	}
	return p, nil
}

// PrincipalOfConn names the principal of a TLS connection: the leaf of the
// first chain the handshake verified. A connection whose client sent no
// certificate, or one nobody verified (a server that only requested it),
// names no one: an error wrapping apierr.ErrUnauthenticated. Only verified
// chains count, so the server's tls.Config must verify client certificates
// itself (tls.VerifyClientCertIfGiven or RequireAndVerifyClientCert), not in
// a VerifyPeerCertificate callback that leaves VerifiedChains empty.
func PrincipalOfConn(state *tls.ConnectionState, field string) (string, error) {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return "", fmt.Errorf("%w: no client certificate: this nimbus requires one (%s); give this client %s and %s",
			apierr.ErrUnauthenticated, configs.KeyTLSClientAuthRequired, configs.KeyTLSCert, configs.KeyTLSKey)
	}
	return PrincipalOf(state.VerifiedChains[0][0], field)
}
