package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc/credentials"

	"github.com/nimbusha/nimbus/configs"
)

// errNoCertificate is why a process without a certificate cannot serve TLS.
var errNoCertificate = fmt.Errorf("certs: this process has no certificate to serve TLS with (%s)", configs.KeyTLSCert)

// ServerConfig returns the TLS configuration of a server (a gRPC listener,
// the metrics port): TLS 1.2 or later, presenting this process's certificate
// as it is at each handshake.
//
// With requireClientCert, a client's certificate is asked for, and one that
// is sent must be for clientAuth and verified by the truststore as it is at
// the handshake: crypto/tls verifies it (tls.VerifyClientCertIfGiven, with
// the truststore as ClientCAs), so the connection's VerifiedChains hold it.
// A client that sends none gets through the handshake with no identity,
// and package auth answers its calls UNAUTHENTICATED, saying what to do: a
// TLS alert could say nothing. Without requireClientCert, no client
// certificate is asked for, so none is ever taken for an identity.
//
// For gRPC, use ServerCredentials: it adds h2, and turns crypto/tls's
// refusals of client certificates into errors that say what to fix, logged
// with the client's address.
func (r *Reloader) ServerConfig(requireClientCert bool) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.serverConfigFor(requireClientCert)
		},
	}
}

// serverConfigFor is one handshake's configuration, from the material as it
// is now.
func (r *Reloader) serverConfigFor(requireClientCert bool) (*tls.Config, error) {
	m := r.current()
	if m.cert == nil {
		return nil, errNoCertificate
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Time:         r.now,
		Certificates: []tls.Certificate{*m.cert},
		ClientAuth:   tls.NoClientCert,
	}
	if !requireClientCert {
		return cfg, nil
	}
	// Not RequireAndVerifyClientCert: a caller without a certificate is
	// told why by package auth, in an answer, not by a bare TLS alert.
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.ClientCAs = m.pool
	return cfg, nil
}

// explainRefusal returns, for a server's failed handshake, why the
// client's certificate was refused in words that say what to fix, or nil
// if the handshake failed for another reason. crypto/tls's refusal carries
// the certificates, which are checked again here to say why.
func (r *Reloader) explainRefusal(err error) error {
	var ours *refusal
	if errors.As(err, &ours) {
		return ours
	}
	var refused *tls.CertificateVerificationError
	if !errors.As(err, &refused) || len(refused.UnverifiedCertificates) == 0 {
		return nil
	}
	cs := tls.ConnectionState{PeerCertificates: refused.UnverifiedCertificates}
	if why := verifyClient(r.current(), cs, r.now()); why != nil {
		return why
	}
	// Verified now: the truststore changed in between, or crypto/tls
	// checks something this package does not.
	return &refusal{reason: ErrUntrusted, cause: err,
		msg: fmt.Sprintf("the client's certificate (%s) was refused: %v", subject(refused.UnverifiedCertificates[0]), refused.Err)}
}

// ServerCredentials is ServerConfig for a gRPC server (grpc.Creds). A
// client it refuses for its certificate is logged at warning with its
// address and the reason, which the handshake's error also gives.
func (r *Reloader) ServerCredentials(requireClientCert bool) credentials.TransportCredentials {
	return &serverCredentials{TransportCredentials: credentials.NewTLS(r.ServerConfig(requireClientCert)), r: r}
}

// serverCredentials is gRPC's TLS credentials with refusals explained.
type serverCredentials struct {
	credentials.TransportCredentials
	r *Reloader
}

// ServerHandshake runs the TLS handshake of an accepted connection; it
// blocks until the handshake ends.
func (c *serverCredentials) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err == nil {
		return conn, info, nil
	}
	why := c.r.explainRefusal(err)
	if why == nil {
		return nil, nil, err
	}
	c.r.log.Warn("refused a TLS client", "remote", raw.RemoteAddr().String(), "reason", why.Error())
	return nil, nil, why
}

func (c *serverCredentials) Clone() credentials.TransportCredentials {
	return &serverCredentials{TransportCredentials: c.TransportCredentials.Clone(), r: c.r}
}
