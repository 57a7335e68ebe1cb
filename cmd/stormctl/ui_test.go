package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nimbusha/nimbus/certs"
)

// stormctl ui's proxy: a browser without a certificate reaches a nimbus
// that requires one, as the user whose certificate the proxy holds; a
// request naming another host (DNS rebinding) or another site's POST is
// refused and never forwarded.
func TestUIProxyLendsTheCertificateOnlyToItsOwnPages(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA(dir, "test-ca", 0)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(dir, "nimbus", certs.CertOptions{Server: true, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := ca.Issue(dir, "alice", certs.CertOptions{Client: true})
	if err != nil {
		t.Fatal(err)
	}

	// The nimbus: requires a client certificate, answers with its name.
	var forwarded atomic.Int32
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	serverPair, err := tls.LoadX509KeyPair(server.Cert, server.Key)
	if err != nil {
		t.Fatal(err)
	}
	nimbus := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
			http.Error(w, "browser headers forwarded", http.StatusBadRequest)
			return
		}
		io.WriteString(w, "hello "+r.TLS.PeerCertificates[0].Subject.CommonName+" "+r.Method+" "+r.URL.Path)
	}))
	nimbus.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	nimbus.StartTLS()
	t.Cleanup(nimbus.Close)

	tlsm, err := certs.Load(alice.Files, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(nimbus.URL)
	p := newUIProxy(target, 8001, tlsm)
	do := func(method, host string, header map[string]string) (int, string) {
		req := httptest.NewRequest(method, "http://"+host+"/api/v1/cluster/summary", nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}

	if code, body := do(http.MethodGet, "127.0.0.1:8001", nil); code != http.StatusOK || body != "hello alice GET /api/v1/cluster/summary" {
		t.Fatalf("GET through the proxy: %d %q", code, body)
	}
	sameOrigin := map[string]string{"Origin": "http://localhost:8001", "Sec-Fetch-Site": "same-origin"}
	if code, body := do(http.MethodPost, "localhost:8001", sameOrigin); code != http.StatusOK || body != "hello alice POST /api/v1/cluster/summary" {
		t.Fatalf("the UI's own POST: %d %q", code, body)
	}
	before := forwarded.Load()
	if code, body := do(http.MethodGet, "evil.example:8001", nil); code != http.StatusForbidden || !strings.Contains(body, `"evil.example:8001"`) {
		t.Errorf("Host evil.example: %d %q, want 403 naming it", code, body)
	}
	crossSite := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	if code, _ := do(http.MethodPost, "127.0.0.1:8001", crossSite); code != http.StatusForbidden {
		t.Errorf("another site's POST: %d, want 403", code)
	}
	if n := forwarded.Load() - before; n != 0 {
		t.Fatalf("%d refused requests reached the nimbus", n)
	}
}
