package client

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A nimbus whose certificate the client does not trust refuses every
// handshake: a leader call says why at once instead of retrying its whole
// budget, and the address's failure carries the handshake's reason.
func TestHandshakeRefusalIsFinalAndSaysWhy(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	ours, err := certs.NewCA(dir+"/ours", "Our CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := certs.NewCA(dir+"/theirs", "Their CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, err := theirs.Issue(dir+"/theirs", "nimbus", certs.CertOptions{Server: true, Hosts: []string{"127.0.0.1"}, Lifetime: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tlsm, err := certs.Load(server.Files, quiet)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakenimbus.Server{}
	lis, addr := fakenimbus.Listen(t)
	f.OnGetLeader = fakenimbus.LeaderAt(addr)
	f.OnKill = func(*nimbusv1.KillTopologyRequest) error { return nil }
	f.Serve(t, lis, grpc.Creds(tlsm.ServerCredentials(false)))

	trusting, err := certs.Load(certs.Files{Truststore: ours.CertFile}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New([]string{addr}, WithTransportCredentials(trusting.ClientCredentials()), WithRetry(0, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	began := time.Now()
	err = c.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "wc"})
	var seeds *NoSeedAnsweredError
	var hs *HandshakeError
	if !errors.As(err, &seeds) || !errors.As(seeds.Failures[0].Dial, &hs) || !errors.Is(hs, certs.ErrUntrusted) {
		t.Fatalf("kill: %v, want the address's failure to be a HandshakeError saying the certificate is untrusted", err)
	}
	if elapsed := time.Since(began); elapsed > 10*time.Second {
		t.Errorf("kill took %v: the refused handshake was retried", elapsed)
	}
	if f.Calls("KillTopology") != 0 {
		t.Error("the kill reached the nimbus")
	}
}
