package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// ClientConfig returns the TLS configuration of a client that dials
// serverName (the host of host:port, a name or an IP literal): TLS 1.2 or
// later, presenting this process's certificate if a server asks for one, and
// verifying the server's certificate against the truststore as it is at the
// handshake, for serverAuth and for serverName. With serverName empty, the
// name in the configuration's ServerName at the handshake is checked, which
// leaves an IP literal unchecked and refused: dial IPs with a name given, or
// use ClientCredentials.
//
// A client without a certificate of its own sends none when asked: a
// nimbus that requires one answers its calls UNAUTHENTICATED, saying so.
func (r *Reloader) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		// Verified by VerifyConnection, against the truststore as it is
		// at the handshake: tls.Config.RootCAs could not change after the
		// dial began, and crypto/tls's refusals do not say what to fix.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if m := r.current(); m.cert != nil {
				return m.cert, nil
			}
			return &tls.Certificate{}, nil // none
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(r.current(), serverName, cs, r.now())
		},
	}
}

// ClientConfigAnyName is ClientConfig without the check of the server's
// name: the chain must still lead to the truststore and be for serverAuth.
// It is for servers whose certificates do not name the address clients
// dial (storm.zookeeper.ssl.hostnameVerification false).
func (r *Reloader) ClientConfigAnyName() *tls.Config {
	cfg := r.ClientConfig("")
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyChain(peer{role: "server", host: cs.ServerName}, r.current(), cs.PeerCertificates, x509.ExtKeyUsageServerAuth, r.now())
	}
	return cfg
}

// DialTLSContext dials addr and makes a TLS connection verified as
// ClientConfig does for addr's host: an http.Transport's DialTLSContext
// for a client of many HTTPS servers, each checked for its own name.
func (r *Reloader) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, r.ClientConfig(host))
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

// ClientCredentials returns gRPC transport credentials
// (grpc.WithTransportCredentials) that verify each server as ClientConfig
// does, for the host of the address dialed: one set serves every address.
// On a nil Reloader, which is what FromConfig gives with TLS off, they are
// plaintext: callers need not tell the two cases apart.
func (r *Reloader) ClientCredentials() credentials.TransportCredentials {
	if r == nil {
		return insecure.NewCredentials()
	}
	return &clientCredentials{TransportCredentials: credentials.NewTLS(r.ClientConfig("")), r: r}
}

// clientCredentials is gRPC's TLS credentials with ClientHandshake made
// from ClientConfig for the authority's host.
type clientCredentials struct {
	credentials.TransportCredentials
	r *Reloader
}

// ClientHandshake runs the TLS handshake for authority (host:port); it
// blocks until the handshake ends or ctx does.
func (c *clientCredentials) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		host = authority // no port
	}
	return credentials.NewTLS(c.r.ClientConfig(host)).ClientHandshake(ctx, authority, raw)
}

func (c *clientCredentials) Clone() credentials.TransportCredentials {
	return &clientCredentials{TransportCredentials: c.TransportCredentials.Clone(), r: c.r}
}

// OverrideServerName is deprecated in gRPC and not supported: the name
// checked is the host dialed (grpc.WithAuthority changes it).
func (c *clientCredentials) OverrideServerName(string) error {
	return errors.New("certs: OverrideServerName is not supported; use grpc.WithAuthority")
}
