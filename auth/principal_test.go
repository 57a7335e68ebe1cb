package auth_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/authtest"
)

func TestPrincipalOf(t *testing.T) {
	spiffe, _ := url.Parse("spiffe://cluster.local/ns/storm/sa/alice")
	full := &x509.Certificate{
		Subject:        pkix.Name{CommonName: "alice", Organization: []string{"storm"}},
		EmailAddresses: []string{"alice@example.com", "al@example.com"},
		DNSNames:       []string{"alice.example.com"},
		URIs:           []*url.URL{spiffe},
	}
	empty := &x509.Certificate{Subject: pkix.Name{Organization: []string{"storm"}}}
	for _, tc := range []struct {
		field string
		want  string
	}{
		{configs.PrincipalCN, "alice"},
		{configs.PrincipalSANEmail, "alice@example.com"},
		{configs.PrincipalSANDNS, "alice.example.com"},
		{configs.PrincipalSANURI, "spiffe://cluster.local/ns/storm/sa/alice"},
	} {
		got, err := auth.PrincipalOf(full, tc.field)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.field, got, err, tc.want)
		}
		if _, err := auth.PrincipalOf(empty, tc.field); !errors.Is(err, apierr.ErrUnauthenticated) {
			t.Errorf("%s of a certificate without one: got %v, want Unauthenticated", tc.field, err)
		}
	}
	if _, err := auth.PrincipalOf(full, "subject.o"); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// TestPrincipalOfConn: only a verified chain names anyone.
func TestPrincipalOfConn(t *testing.T) {
	ca := authtest.NewCA(t)
	leaf := ca.Client(t, "alice").Leaf
	verified := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf}}}
	if p, err := auth.PrincipalOfConn(verified, configs.PrincipalCN); err != nil || p != "alice" {
		t.Fatalf("verified: got %q, %v", p, err)
	}
	for name, st := range map[string]*tls.ConnectionState{
		"no TLS":         nil,
		"no certificate": {},
		"not verified":   {PeerCertificates: []*x509.Certificate{leaf}},
	} {
		if _, err := auth.PrincipalOfConn(st, configs.PrincipalCN); !errors.Is(err, apierr.ErrUnauthenticated) {
			t.Errorf("%s: got %v, want Unauthenticated", name, err)
		}
	}
}
