package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/nimbusha/nimbus/internal/testkit/grpctest"
)

// CA is a throwaway certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	Pool *x509.CertPool // holds the CA's certificate alone
}

// NewCA makes a CA valid for an hour.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "nimbus test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert: cert, key: key, Pool: pool}
}

// Issue signs a certificate made from tmpl (its subject and SANs; the
// serial, validity, key and usages are filled in) for both client and
// server use.
func (ca *CA) Issue(t testing.TB, tmpl x509.Certificate) tls.Certificate {
	t.Helper()
	return issue(t, &tmpl, ca.cert, ca.key)
}

// Client issues a client certificate whose common name is cn.
func (ca *CA) Client(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	return ca.Issue(t, x509.Certificate{Subject: pkix.Name{CommonName: cn}})
}

// ServerConfig is a server's TLS configuration: a certificate for
// 127.0.0.1, and client certificates verified against the CA when given
// (tls.VerifyClientCertIfGiven), so that a caller without one reaches the
// interceptors, which answer Unauthenticated.
func (ca *CA) ServerConfig(t testing.TB) *tls.Config {
	t.Helper()
	cert := ca.Issue(t, x509.Certificate{Subject: pkix.Name{CommonName: "nimbus"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}})
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.Pool,
		ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12}
}

// ClientConfig is a client's TLS configuration that trusts the CA and
// presents certs (none: no client certificate).
func (ca *CA) ClientConfig(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: ca.Pool, Certificates: certs, MinVersion: tls.VersionTLS12}
}

// SelfSigned makes a certificate for cn that no CA signed.
func SelfSigned(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	return issue(t, tmpl, tmpl, key, key)
}

// Serve starts a gRPC server with TLS configuration cfg on a loopback port,
// with register's services and opts (interceptors, say), and returns its
// address. It stops when the test ends.
func Serve(t testing.TB, cfg *tls.Config, register func(*grpc.Server), opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.Creds(credentials.NewTLS(cfg))}, opts...)...)
	register(srv)
	grpctest.Serve(t, srv, lis)
	return lis.Addr().String()
}

// Dial connects to addr with TLS configuration cfg; the connection closes
// when the test ends.
func Dial(t testing.TB, addr string, cfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// issue signs tmpl with parent's key signer; the certificate's own key is
// own[0] if given, else a new one.
func issue(t testing.TB, tmpl, parent *x509.Certificate, signer *ecdsa.PrivateKey, own ...*ecdsa.PrivateKey) tls.Certificate {
	t.Helper()
	key := newKey(t)
	if len(own) > 0 {
		key = own[0]
	}
	tmpl.SerialNumber = serial(t)
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
