package certs

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"
)

// A new connection sees a rotated certificate without a restart, on the
// server and on the client, and the reload is logged with the new expiry.
func TestRotationWithoutRestart(t *testing.T) {
	ca := newCA(t, "Test CA")
	serverLogger, serverLogs := newLogger()
	serverFiles := issue(t, ca, "nimbus-1", serverOpts()).Files
	server := mustLoad(t, serverFiles, serverLogger)
	clientFiles := issue(t, ca, "alice", clientOpts()).Files
	client := mustLoad(t, clientFiles, slog.New(slog.DiscardHandler))
	hs := serveHealth(t, server.ServerCredentials(true))
	if _, err := check(hs.addr, client.ClientCredentials()); err != nil {
		t.Fatal(err)
	}

	// New pairs with another expiry, renamed over the old files.
	nextServer := issue(t, ca, "nimbus-1", CertOptions{Server: true, Client: true, Hosts: loopback, Lifetime: 48 * time.Hour})
	nextClient := issue(t, ca, "alice", CertOptions{Client: true, Lifetime: 24 * time.Hour})
	replace(t, serverFiles, nextServer)
	replace(t, clientFiles, nextClient)

	// (A poll of our own: testcluster makes its certificates with this
	// package, so its WaitFor is not ours to import here.)
	waitFor(t, 10*time.Second, "the rotated certificates in use", func() error {
		got, err := check(hs.addr, client.ClientCredentials())
		if err != nil {
			return err
		}
		if !got.NotAfter.Equal(nextServer.Leaf.NotAfter) {
			return fmt.Errorf("server's certificate expires %s, want %s", date(got.NotAfter), date(nextServer.Leaf.NotAfter))
		}
		if c := leafOf(hs.lastClient()); !c.NotAfter.Equal(nextClient.Leaf.NotAfter) {
			return fmt.Errorf("client's certificate expires %s, want %s", date(c.NotAfter), date(nextClient.Leaf.NotAfter))
		}
		return nil
	})
	// Once, or twice if a check fell between the two renames.
	if l := serverLogs.lines("level=INFO", `msg="reloaded TLS material"`, `not_after="`+date(nextServer.Leaf.NotAfter)+`"`); len(l) == 0 {
		t.Errorf("want the reload logged with the new expiry, got:\n%s", serverLogs)
	}
}

// A broken file during a rotation keeps the old material in use, and is
// logged once per change.
func TestBrokenRotationKeepsTheOldMaterial(t *testing.T) {
	ca := newCA(t, "Test CA")
	logger, logs := newLogger()
	first := issue(t, ca, "nimbus-1", serverOpts())
	server := mustLoad(t, first.Files, logger)
	clk := withClock(server)
	client := mustLoad(t, issue(t, ca, "alice", clientOpts()).Files, slog.New(slog.DiscardHandler))
	hs := serveHealth(t, server.ServerCredentials(true))
	serving := func(want *Issued) {
		t.Helper()
		got, err := check(hs.addr, client.ClientCredentials())
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want.Leaf) {
			t.Fatalf("server presents %s expiring %s, want the one expiring %s", got.Subject, date(got.NotAfter), date(want.Leaf.NotAfter))
		}
	}
	warnings := func() int { return len(logs.lines("level=WARN", "TLS files changed but cannot be used")) }

	if err := os.WriteFile(first.Files.Cert, []byte("half a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 { // three checks, one warning: the files changed once
		clk.Add(DefaultCheckInterval)
		serving(first)
	}
	if n := warnings(); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs)
	}
	want := fmt.Sprintf(`err="certs: certificate %s (nimbus.grpc.tls.cert.path) is not PEM (no -----BEGIN line)" subject="CN=nimbus-1" not_after="%s"`,
		first.Files.Cert, date(first.Leaf.NotAfter))
	if len(logs.lines(want)) != 1 {
		t.Errorf("want a warning with %s, got:\n%s", want, logs)
	}

	// A certificate for another key is another change, warned of again.
	if err := os.WriteFile(first.Files.Cert, readFile(t, issue(t, ca, "nimbus-2", serverOpts()).Files.Cert), 0o644); err != nil {
		t.Fatal(err)
	}
	clk.Add(DefaultCheckInterval)
	serving(first)
	if n := warnings(); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, logs)
	}

	// A whole pair is taken.
	next := issue(t, ca, "nimbus-1", CertOptions{Server: true, Hosts: loopback, Lifetime: time.Hour})
	replace(t, first.Files, next)
	clk.Add(DefaultCheckInterval)
	serving(next)
}

// The files are looked at no more than once per interval.
func TestReloadIsRateLimited(t *testing.T) {
	ca := newCA(t, "Test CA")
	first := issue(t, ca, "nimbus-1", serverOpts())
	r := mustLoad(t, first.Files, slog.New(slog.DiscardHandler))
	clk := withClock(r)
	next := issue(t, ca, "nimbus-1", CertOptions{Server: true, Hosts: loopback, Lifetime: time.Hour})
	replace(t, first.Files, next)

	clk.Add(DefaultCheckInterval - time.Millisecond)
	if got := r.Certificate(); !got.Equal(first.Leaf) {
		t.Errorf("within the interval: %s expiring %s, want the first certificate", got.Subject, date(got.NotAfter))
	}
	clk.Add(time.Millisecond)
	if got := r.Certificate(); !got.Equal(next.Leaf) {
		t.Errorf("after the interval: %s expiring %s, want the new certificate", got.Subject, date(got.NotAfter))
	}
}

// A certificate not valid yet (a clock behind the issuer's) is taken once
// it is, without another change to the files.
func TestReloadRetriesACertificateNotValidYet(t *testing.T) {
	ca := newCA(t, "Test CA")
	logger, logs := newLogger()
	first := issue(t, ca, "nimbus-1", serverOpts())
	r := mustLoad(t, first.Files, logger)
	clk := withClock(r)
	next := issue(t, ca, "nimbus-1", CertOptions{Server: true, Hosts: loopback, NotBefore: clk.Now().Add(30 * time.Second)})
	replace(t, first.Files, next)

	for range 2 {
		clk.Add(DefaultCheckInterval)
		if got := r.Certificate(); !got.Equal(first.Leaf) {
			t.Fatalf("took a certificate not valid yet")
		}
	}
	if l := logs.lines("level=WARN", "is not valid until "+date(next.Leaf.NotBefore)); len(l) != 1 {
		t.Errorf("want one warning, got:\n%s", logs)
	}
	clk.Add(30 * time.Second)
	if got := r.Certificate(); !got.Equal(next.Leaf) {
		t.Errorf("the certificate valid now was not taken")
	}
}

// A truststore that gains a CA verifies its clients from the next
// handshake on.
func TestTruststoreRotation(t *testing.T) {
	ca := newCA(t, "CA One")
	server := mustLoad(t, issue(t, ca, "nimbus-1", serverOpts()).Files, slog.New(slog.DiscardHandler))
	clk := withClock(server)
	otherCA := newCA(t, "CA Two")
	client := rawClient(t, issue(t, otherCA, "alice", clientOpts()))
	if serverErr, _ := handshake(t, server.ServerConfig(true), client); serverErr == nil {
		t.Fatal("a client of CA Two was accepted before the truststore had it")
	}
	bundle := append(readFile(t, ca.CertFile), readFile(t, otherCA.CertFile)...)
	if err := os.WriteFile(ca.CertFile, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	clk.Add(DefaultCheckInterval)
	if serverErr, clientErr := handshake(t, server.ServerConfig(true), client); serverErr != nil || clientErr != nil {
		t.Errorf("server's error %v, client's %v; want none once the truststore has CA Two", serverErr, clientErr)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor polls cond under a deadline, as testcluster.WaitFor does.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(timeout)
	for err := cond(); err != nil; err = cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		<-tick.C
	}
}
