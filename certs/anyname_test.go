package certs

import (
	"errors"
	"log/slog"
	"testing"
)

// Without the name check (storm.zookeeper.ssl.hostnameVerification false)
// a server whose certificate names other hosts is accepted, but the chain
// is still verified: another CA's certificate, or a client certificate, is
// refused.
func TestClientConfigAnyNameChecksTheChainOnly(t *testing.T) {
	ca := newCA(t, "Test CA")
	client := mustLoad(t, issue(t, ca, "alice", clientOpts()).Files, slog.New(slog.DiscardHandler))
	wrongHost := issue(t, ca, "zk-a", CertOptions{Server: true, Hosts: []string{"zk-a.example"}})

	if _, err := handshake(t, rawServer(t, wrongHost), client.ClientConfig("127.0.0.1")); !errors.Is(err, ErrWrongName) {
		t.Fatalf("ClientConfig: handshake with a certificate for zk-a.example = %v, want %v", err, ErrWrongName)
	}
	if _, err := handshake(t, rawServer(t, wrongHost), client.ClientConfigAnyName()); err != nil {
		t.Errorf("ClientConfigAnyName: handshake with a certificate for zk-a.example = %v, want success", err)
	}
	for _, tc := range []struct {
		name   string
		server *Issued
		reason error
	}{
		{"another CA", issue(t, newCA(t, "Other CA"), "zk-x", serverOpts()), ErrUntrusted},
		{"a client certificate", issue(t, ca, "bob", CertOptions{Client: true, Hosts: loopback}), ErrWrongUsage},
	} {
		if _, err := handshake(t, rawServer(t, tc.server), client.ClientConfigAnyName()); !errors.Is(err, tc.reason) {
			t.Errorf("ClientConfigAnyName, %s: handshake = %v, want %v", tc.name, err, tc.reason)
		}
	}
}
