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

// uiTLS is a CA, alice's certificate as stormctl holds it, and servers
// that require a client certificate the CA signed, as a secure nimbus and
// logviewer do.
type uiTLS struct {
	alice  *certs.Reloader
	server tls.Certificate
	pool   *x509.CertPool
}

func newUITLS(t *testing.T) *uiTLS {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA(dir, "test-ca", 0)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(dir, "server", certs.CertOptions{Server: true, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := ca.Issue(dir, "alice", certs.CertOptions{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(server.Cert, server.Key)
	if err != nil {
		t.Fatal(err)
	}
	tlsm, err := certs.Load(alice.Files, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &uiTLS{alice: tlsm, server: pair, pool: pool}
}

// serve starts an HTTPS server of h that requires a client certificate.
func (u *uiTLS) serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{u.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: u.pool}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// echo answers who asked what, and refuses what the browser must not pass
// on: its origin headers and the proxy's cookie.
func echo(count *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Cookie") != "" {
			http.Error(w, "browser headers forwarded", http.StatusBadRequest)
			return
		}
		io.WriteString(w, "hello "+r.TLS.PeerCertificates[0].Subject.CommonName+" "+r.Method+" "+r.URL.Path)
	}
}

const testUIToken = "the-token"

// uiRequest sends a request to p as a browser that opened its URL (with
// the cookie) unless cookie is false.
func uiRequest(p *uiProxy, method, host, path string, cookie bool, header map[string]string) *httptest.ResponseRecorder {
	req := requestTo(method, host, path)
	if cookie {
		req.AddCookie(&http.Cookie{Name: p.access.cookie, Value: testUIToken})
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return serveOne(p, req)
}

// requestTo is a request as the proxy's server reads it: path as the
// browser sent it, Host as given.
func requestTo(method, host, path string) *http.Request {
	req := httptest.NewRequest(method, path, nil)
	req.Host = host
	return req
}

func serveOne(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// stormctl ui's proxy: the browser that opened its URL, without a
// certificate, reaches a nimbus that requires one, as the user whose
// certificate the proxy holds; a request naming another host (DNS
// rebinding) or another site's POST is refused and never forwarded.
func TestUIProxyLendsTheCertificateOnlyToItsOwnPages(t *testing.T) {
	u := newUITLS(t)
	var forwarded atomic.Int32
	nimbus := u.serve(t, echo(&forwarded))
	target, _ := url.Parse(nimbus.URL)
	p := newUIProxy(target, 8001, testUIToken, u.alice, nil)

	rec := uiRequest(p, http.MethodGet, "127.0.0.1:8001", "/api/v1/cluster/summary", true, nil)
	if rec.Code != http.StatusOK || rec.Body.String() != "hello alice GET /api/v1/cluster/summary" {
		t.Fatalf("GET through the proxy: %d %q", rec.Code, rec.Body)
	}
	if got := rec.Header().Get(uiLogviewerHeader); got != "logviewer/" {
		t.Errorf("%s: %q, want logviewer/ (the page's log links go through the relay)", uiLogviewerHeader, got)
	}
	sameOrigin := map[string]string{"Origin": "http://localhost:8001", "Sec-Fetch-Site": "same-origin"}
	if rec := uiRequest(p, http.MethodPost, "localhost:8001", "/api/v1/cluster/summary", true, sameOrigin); rec.Code != http.StatusOK || rec.Body.String() != "hello alice POST /api/v1/cluster/summary" {
		t.Fatalf("the UI's own POST: %d %q", rec.Code, rec.Body)
	}
	before := forwarded.Load()
	if rec := uiRequest(p, http.MethodGet, "evil.example:8001", "/api/v1/cluster/summary", true, nil); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"evil.example:8001"`) {
		t.Errorf("Host evil.example: %d %q, want 403 naming it", rec.Code, rec.Body)
	}
	crossSite := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	if rec := uiRequest(p, http.MethodPost, "127.0.0.1:8001", "/api/v1/cluster/summary", true, crossSite); rec.Code != http.StatusForbidden {
		t.Errorf("another site's POST: %d, want 403", rec.Code)
	}
	if n := forwarded.Load() - before; n != 0 {
		t.Fatalf("%d refused requests reached the nimbus", n)
	}
	if got, want := p.url(), "http://127.0.0.1:8001/?token="+testUIToken; got != want {
		t.Errorf("printed URL %q, want %q", got, want)
	}
}
