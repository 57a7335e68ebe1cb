package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/certs"
)

// The quickstart's way: a CA, a daemon's certificate and a user's, made
// with stormctl and loaded with package certs, then used for mutual TLS.
func TestTLSCreateAndLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	code, stdout, stderr := runArgs("tls", "ca", "create", "--dir", dir, "--name", "Test CA")
	if code != exitOK {
		t.Fatalf("tls ca create: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"), "CN=Test CA", "nimbus.grpc.tls.truststore.path"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tls ca create printed %q, want it to name %q", stdout, want)
		}
	}
	code, stdout, stderr = runArgs("tls", "cert", "create", "--dir", dir, "--name", "nimbus-1",
		"--server", "--client", "--host", "nimbus-1.example", "--host", "10.0.0.1")
	if code != exitOK {
		t.Fatalf("tls cert create: exit %d, stderr %q", code, stderr)
	}
	if want := "hosts:        nimbus-1.example, 10.0.0.1, localhost, 127.0.0.1\n"; !strings.Contains(stdout, want) {
		t.Errorf("tls cert create printed %q, want it to contain %q", stdout, want)
	}
	// A client's certificate, in another directory, with the CA named.
	userDir := t.TempDir()
	if code, _, stderr := runArgs("tls", "cert", "create", "--dir", userDir, "--ca", filepath.Join(dir, "ca.pem"),
		"--ca-key", filepath.Join(dir, "ca-key.pem"), "--name", "alice", "--client", "--days", "2"); code != exitOK {
		t.Fatalf("tls cert create alice: exit %d, stderr %q", code, stderr)
	}

	quiet := slog.New(slog.DiscardHandler)
	truststore := filepath.Join(dir, "ca.pem")
	server, err := certs.Load(certs.Files{Cert: filepath.Join(dir, "nimbus-1.pem"), Key: filepath.Join(dir, "nimbus-1-key.pem"), Truststore: truststore}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	client, err := certs.Load(certs.Files{Cert: filepath.Join(userDir, "alice.pem"), Key: filepath.Join(userDir, "alice-key.pem"), Truststore: truststore}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	leaf := server.Certificate()
	if !slices.Equal(leaf.DNSNames, []string{"nimbus-1.example", "localhost"}) || len(leaf.IPAddresses) != 2 ||
		!slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("nimbus-1: DNS %v, IP %v, usage %v", leaf.DNSNames, leaf.IPAddresses, leaf.ExtKeyUsage)
	}
	alice := client.Certificate()
	if alice.Subject.CommonName != "alice" || !slices.Equal(alice.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("alice: %s, usage %v", alice.Subject, alice.ExtKeyUsage)
	}
	for _, p := range []string{filepath.Join(dir, "ca-key.pem"), filepath.Join(dir, "nimbus-1-key.pem"), filepath.Join(userDir, "alice-key.pem")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	mutualTLS(t, server, client)
}

// mutualTLS makes one connection over loopback with the two, the server
// requiring a client certificate.
func mutualTLS(t *testing.T, server, client *certs.Reloader) {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", server.ServerConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := lis.Accept()
		if err == nil {
			err = c.(*tls.Conn).Handshake()
			if err == nil {
				_, err = c.Write([]byte{1})
			}
			c.Close()
		}
		accepted <- err
	}()
	c, err := tls.Dial("tcp", lis.Addr().String(), client.ClientConfig("127.0.0.1"))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Errorf("read: %v", err)
	}
	if err := <-accepted; err != nil {
		t.Errorf("server: %v", err)
	}
}

func TestTLSCreateJSON(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runArgs("tls", "ca", "create", "--dir", dir); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runArgs("-o", "json", "tls", "cert", "create", "--dir", dir, "--name", "nimbus-1", "--server")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got struct {
		Certificate, Key, Subject string
		Usage, Hosts              []string
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if got.Certificate != filepath.Join(dir, "nimbus-1.pem") || got.Key != filepath.Join(dir, "nimbus-1-key.pem") ||
		got.Subject != "CN=nimbus-1" || !slices.Equal(got.Usage, []string{"server"}) || !slices.Equal(got.Hosts, []string{"localhost", "127.0.0.1"}) {
		t.Errorf("printed %+v", got)
	}
}

func TestTLSUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // the error line
	}{
		{[]string{"tls"}, "stormctl: tls: missing command (ca, cert) (see 'stormctl --help')\n"},
		{[]string{"tls", "key"}, "stormctl: tls: unknown command \"key\" (see 'stormctl --help')\n"},
		{[]string{"tls", "ca"}, "stormctl: ca: missing command (create) (see 'stormctl --help')\n"},
		{[]string{"tls", "ca", "create"}, "stormctl: stormctl tls ca create: --dir is required (see 'stormctl --help')\n"},
		{[]string{"tls", "ca", "create", "--dir", dir, "--days", "0"}, "stormctl: --days 0: want a whole number from 1 to 36500 (see 'stormctl --help')\n"},
		{[]string{"tls", "cert", "create", "--dir", dir}, "stormctl: stormctl tls cert create: --name is required (see 'stormctl --help')\n"},
		{[]string{"tls", "cert", "create", "--dir", dir, "--name", "x"}, "stormctl: stormctl tls cert create: give --server, --client or both (see 'stormctl --help')\n"},
		{[]string{"tls", "cert", "create", "--dir", dir, "--name", "x", "--client", "--host", "h"}, "stormctl: stormctl tls cert create: --host is for a --server certificate (see 'stormctl --help')\n"},
		{[]string{"tls", "ca", "create", "extra"}, "stormctl: create takes no arguments, got \"extra\" (see 'stormctl --help')\n"},
	} {
		if stderr := runFails(t, exitUsage, tc.args...); stderr != tc.want {
			t.Errorf("%q: stderr\n %q\nwant\n %q", tc.args, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a usage error wrote %d files", len(entries))
	}
}

func TestTLSErrors(t *testing.T) {
	dir := t.TempDir()
	stderr := runFails(t, exitError, "tls", "cert", "create", "--dir", dir, "--name", "alice", "--client")
	if want := "stormctl: tls cert create: certs: CA certificate " + filepath.Join(dir, "ca.pem") + " does not exist\n"; stderr != want {
		t.Errorf("no CA: stderr %q, want %q", stderr, want)
	}
	if code, _, stderr := runArgs("tls", "ca", "create", "--dir", dir); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	stderr = runFails(t, exitError, "tls", "ca", "create", "--dir", dir)
	if want := "stormctl: tls ca create: certs: " + filepath.Join(dir, "ca-key.pem") + " already exists; remove it first, or write elsewhere\n"; stderr != want {
		t.Errorf("second CA: stderr %q, want %q", stderr, want)
	}
}
