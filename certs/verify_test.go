package certs

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// The messages a client gets when a server's certificate is refused.
func TestClientRefusesServer(t *testing.T) {
	ca := newCA(t, "Test CA")
	client := mustLoad(t, issue(t, ca, "alice", clientOpts()).Files, slog.New(slog.DiscardHandler))
	otherCA := newCA(t, "Other CA")
	sameName := newCA(t, "Test CA")
	wrongHost := issue(t, ca, "nimbus-a", CertOptions{Server: true, Hosts: []string{"nimbus-a.example", "10.0.0.1"}})
	old := issue(t, ca, "old", expired())
	future := issue(t, ca, "future", CertOptions{Server: true, Hosts: loopback, NotBefore: time.Now().Add(time.Hour)})

	for _, tc := range []struct {
		name   string
		server *Issued
		reason error
		want   string
	}{
		{"another CA", issue(t, otherCA, "nimbus-x", serverOpts()), ErrUntrusted,
			"the server's certificate (CN=nimbus-x, issued by CN=Other CA) is not signed by a CA in " + ca.CertFile},
		{"another CA of the same name", issue(t, sameName, "nimbus-x", serverOpts()), ErrUntrusted,
			"the server's certificate (CN=nimbus-x, issued by CN=Test CA) is not signed by a CA in " + ca.CertFile +
				" (that file has a CA named CN=Test CA, but another one: was the CA made again?)"},
		{"expired", old, ErrExpired,
			"the certificate of 127.0.0.1 expired on " + date(old.Leaf.NotAfter)},
		{"not valid yet", future, ErrNotYetValid,
			"the certificate of 127.0.0.1 is not valid until " + date(future.Leaf.NotBefore) + " (is a clock wrong?)"},
		{"another host", wrongHost, ErrWrongName,
			"the certificate of 127.0.0.1 is for [nimbus-a.example 10.0.0.1], not 127.0.0.1"},
		{"a client certificate", issue(t, ca, "bob", CertOptions{Client: true, Hosts: loopback}), ErrWrongUsage,
			"the certificate of 127.0.0.1 is not a server certificate (its extended key usage is clientAuth)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := handshake(t, rawServer(t, tc.server), client.ClientConfig("127.0.0.1"))
			if err == nil {
				t.Fatal("handshake succeeded")
			}
			if err.Error() != tc.want {
				t.Errorf("error\n %q\nwant\n %q", err, tc.want)
			}
			if !errors.Is(err, tc.reason) {
				t.Errorf("error %v is not %v", err, tc.reason)
			}
		})
	}
}

// A CA in the truststore that signed the server's certificate but cannot
// be used is named as the cause.
func TestClientRefusesServerOfUnusableCA(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := issue(t, ca, "nimbus-1", serverOpts())
	client := issue(t, ca, "alice", clientOpts())
	for _, tc := range []struct {
		name   string
		edit   func(*x509.Certificate)
		reason error
		want   string
	}{
		{"expired", func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
		}, ErrExpired, "which expired on "},
		{"not a CA", func(c *x509.Certificate) { c.IsCA, c.MaxPathLenZero = false, false }, ErrUntrusted, "which cannot be used: x509: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same CA, its certificate made again with the edit.
			tmpl := *ca.Cert
			tc.edit(&tmpl)
			der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, ca.key.Public(), ca.key)
			if err != nil {
				t.Fatal(err)
			}
			truststore := writeFile(t, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
			r := mustLoad(t, Files{Cert: client.Files.Cert, Key: client.Files.Key, Truststore: truststore}, slog.New(slog.DiscardHandler))
			_, err = handshake(t, rawServer(t, server), r.ClientConfig("127.0.0.1"))
			want := "the server's certificate (CN=nimbus-1) is signed by CA CN=Test CA in " + truststore + ", " + tc.want
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n %v\nwant it to start\n %q", err, want)
			}
			if !errors.Is(err, tc.reason) {
				t.Errorf("error %v is not %v", err, tc.reason)
			}
			t.Log(err)
		})
	}
}

func TestClientNeedsAServerName(t *testing.T) {
	ca := newCA(t, "Test CA")
	client := mustLoad(t, Files{Truststore: ca.CertFile}, slog.New(slog.DiscardHandler))
	_, err := handshake(t, rawServer(t, issue(t, ca, "nimbus-1", serverOpts())), client.ClientConfig(""))
	want := "certs: no server name to check the server's certificate against (dial with ClientCredentials, or give ClientConfig the host)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// The messages a server that requires client certificates refuses clients
// with (ServerCredentials logs them; see TestGRPCRefusals).
func TestServerRefusesClient(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	old := issue(t, ca, "old", expired())

	for _, tc := range []struct {
		name   string
		client *Issued
		reason error
		want   string
	}{
		{"another CA", issue(t, newCA(t, "Other CA"), "mallory", clientOpts()), ErrUntrusted,
			"the client's certificate (CN=mallory, issued by CN=Other CA) is not signed by a CA in " + ca.CertFile},
		{"expired", old, ErrExpired,
			"the client's certificate (CN=old) expired on " + date(old.Leaf.NotAfter)},
		{"a server certificate", issue(t, ca, "nimbus-2", CertOptions{Server: true, Hosts: loopback}), ErrWrongUsage,
			"the client's certificate (CN=nimbus-2) is not a client certificate (its extended key usage is serverAuth)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverErr, clientErr := handshake(t, server.ServerConfig(true), rawClient(t, tc.client))
			if serverErr == nil {
				t.Fatal("the server accepted the client")
			}
			if clientErr == nil {
				t.Error("the client was not refused")
			}
			why := server.explainRefusal(serverErr)
			if why == nil || why.Error() != tc.want {
				t.Errorf("server's error %v explained as\n %v\nwant\n %q", serverErr, why, tc.want)
			}
			if !errors.Is(why, tc.reason) {
				t.Errorf("error %v is not %v", why, tc.reason)
			}
		})
	}
}

// A failed handshake that is not about the client's certificate is not
// explained as if it were.
func TestExplainRefusalOfOtherErrors(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	cfg := rawClient(t, nil)
	cfg.MaxVersion = tls.VersionTLS11 // below the server's minimum
	serverErr, _ := handshake(t, server.ServerConfig(true), cfg)
	if serverErr == nil {
		t.Fatal("a TLS 1.1 client was accepted")
	}
	if why := server.explainRefusal(serverErr); why != nil {
		t.Errorf("%v explained as %v", serverErr, why)
	}
}

// Our client without a certificate sends none, and a server that asks for
// one lets it through with no identity: package auth then answers its
// calls UNAUTHENTICATED, saying what to do, where a TLS alert could not.
func TestClientWithoutCertificateSendsNone(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	client := mustLoad(t, Files{Truststore: ca.CertFile}, slog.New(slog.DiscardHandler))
	for _, require := range []bool{true, false} {
		if serverErr, clientErr := handshake(t, server.ServerConfig(require), client.ClientConfig("127.0.0.1")); serverErr != nil || clientErr != nil {
			t.Errorf("client auth required %v: server's error %v, client's %v; want none", require, serverErr, clientErr)
		}
	}
	// A raw client with none gets through too.
	if serverErr, clientErr := handshake(t, server.ServerConfig(true), rawClient(t, nil)); serverErr != nil || clientErr != nil {
		t.Errorf("a raw client without a certificate: server's error %v, client's %v; want none", serverErr, clientErr)
	}
}

func TestMutualTLS(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	client := mustLoad(t, issue(t, ca, "alice", clientOpts()).Files, slog.New(slog.DiscardHandler))
	for _, host := range loopback {
		if serverErr, clientErr := handshake(t, server.ServerConfig(true), client.ClientConfig(host)); serverErr != nil || clientErr != nil {
			t.Errorf("dialing %s: server's error %v, client's %v; want none", host, serverErr, clientErr)
		}
	}
}

// A server that requires no client certificate asks for none, so it never
// sees one it could take for an identity.
func TestServerWithoutClientAuthAsksForNoCertificate(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	cfg := server.ServerConfig(false)
	var seen *x509.Certificate
	inner := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := inner(hello)
		if err == nil {
			c.VerifyConnection = func(cs tls.ConnectionState) error { seen = leafOf(cs); return nil }
		}
		return c, err
	}
	if serverErr, clientErr := handshake(t, cfg, rawClient(t, issue(t, ca, "alice", clientOpts()))); serverErr != nil || clientErr != nil {
		t.Fatalf("server's error %v, client's %v; want none", serverErr, clientErr)
	}
	if seen != nil {
		t.Errorf("server saw client certificate %s", seen.Subject)
	}
}

func TestServerWithoutCertificate(t *testing.T) {
	ca := newCA(t, "Test CA")
	server := mustLoad(t, Files{Truststore: ca.CertFile}, slog.New(slog.DiscardHandler))
	serverErr, _ := handshake(t, server.ServerConfig(false), rawClient(t, nil))
	want := "certs: this process has no certificate to serve TLS with (nimbus.grpc.tls.cert.path)"
	if serverErr == nil || serverErr.Error() != want {
		t.Errorf("server's error %v, want %q", serverErr, want)
	}
}

// A key file written by Issue is for its owner only.
func TestKeyFileMode(t *testing.T) {
	c := issue(t, newCA(t, "Test CA"), "nimbus-1", serverOpts())
	fi, err := os.Stat(c.Files.Key)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
}
