package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects a logger's text output for tests; safe for the
// concurrent writes of handshakes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the logged lines that contain every one of parts.
func (b *logBuffer) lines(parts ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for l := range strings.Lines(b.buf.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// waitLines is lines, polled until it finds some or timeout passes: a
// server logs a refused handshake after its client has heard the refusal.
func (b *logBuffer) waitLines(timeout time.Duration, parts ...string) []string {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(timeout); ; <-tick.C {
		if l := b.lines(parts...); len(l) > 0 || !time.Now().Before(deadline) {
			return l
		}
	}
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := new(logBuffer)
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// newCA makes a CA named name in a directory of its own.
func newCA(t *testing.T, name string) *CA {
	t.Helper()
	ca, err := NewCA(t.TempDir(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// issue issues a certificate in a directory of its own.
func issue(t *testing.T, ca *CA, name string, opts CertOptions) *Issued {
	t.Helper()
	c, err := ca.Issue(t.TempDir(), name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loopback is what the tests' servers are for.
var loopback = []string{"127.0.0.1", "localhost"}

func serverOpts() CertOptions { return CertOptions{Server: true, Client: true, Hosts: loopback} }
func clientOpts() CertOptions { return CertOptions{Client: true} }

// expired is a certificate that expired an hour ago.
func expired() CertOptions {
	return CertOptions{Server: true, Client: true, Hosts: loopback, NotBefore: time.Now().Add(-2 * time.Hour), Lifetime: time.Hour}
}

// mustLoad loads files with logger.
func mustLoad(t *testing.T, files Files, logger *slog.Logger) *Reloader {
	t.Helper()
	r, err := Load(files, logger)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// keyPair loads an issued certificate as crypto/tls does, without this
// package's checks: a peer that is not ours, or one with an expired
// certificate.
func keyPair(t *testing.T, c *Issued) tls.Certificate {
	t.Helper()
	kp, err := tls.LoadX509KeyPair(c.Files.Cert, c.Files.Key)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// rawServer is a TLS server configuration that presents c and checks
// nothing: a server that is not ours.
func rawServer(t *testing.T, c *Issued) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{keyPair(t, c)}}
}

// rawClient is a TLS client configuration that presents c (none if nil)
// whatever CAs the server names, and checks nothing: a client that is not
// ours.
func rawClient(t *testing.T, c *Issued) *tls.Config {
	cfg := &tls.Config{InsecureSkipVerify: true}
	if c != nil {
		kp := keyPair(t, c)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &kp, nil }
	}
	return cfg
}

// handshake runs one TLS connection over loopback between a server with
// scfg and a client with ccfg, and returns each side's error. The client's
// includes the server's verdict on its certificate, which TLS 1.3 gives after
// the client's handshake is over: the client reads a byte the server writes
// once its handshake succeeded.
func handshake(t *testing.T, scfg, ccfg *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	done := make(chan error, 1)
	go func() {
		c, err := lis.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		conn := tls.Server(c, scfg)
		err = conn.Handshake()
		if err == nil {
			_, err = conn.Write([]byte{1})
		}
		done <- err
	}()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	conn := tls.Client(c, ccfg)
	clientErr = conn.Handshake()
	if clientErr == nil {
		_, clientErr = conn.Read(make([]byte, 1))
	}
	c.Close()
	return <-done, clientErr
}

// clock is a settable time for a Reloader's now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock makes r read its time from a clock that starts now and that the
// test moves.
func withClock(r *Reloader) *clock {
	c := &clock{t: time.Now()}
	r.now = c.Now
	r.lastCheck.Store(c.t.UnixNano())
	return c
}

// replace puts the files of next in place of those of cur, each by a rename
// as a careful rotation does: the key first, then the certificate.
func replace(t *testing.T, cur Files, next *Issued) {
	t.Helper()
	for _, p := range [][2]string{{next.Files.Key, cur.Key}, {next.Files.Cert, cur.Cert}} {
		if err := os.Rename(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFile writes data to a file named name in a new directory.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// leafOf returns the certificate a connection state's peer presented.
func leafOf(cs tls.ConnectionState) *x509.Certificate {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	return cs.PeerCertificates[0]
}
