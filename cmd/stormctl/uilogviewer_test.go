package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The log relay: /logviewer/<supervisor-id>/<path> reaches that
// supervisor's logviewer at the URL the nimbus registered, with the
// user's certificate, and comes back sandboxed; an id the nimbus does not
// know, a URL in the path, a registered URL that is not http(s), or a
// supervisor without logs reaches nothing.
func TestUILogviewerRelay(t *testing.T) {
	u := newUITLS(t)
	var reached atomic.Int32
	logviewer := u.serve(t, func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Cookie") != "" || r.Header.Get("Origin") != "" {
			http.Error(w, "browser headers forwarded", http.StatusBadRequest)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "stormctl_ui_8001", Value: "planted"})
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "log of "+r.URL.Query().Get("file")+" for "+r.TLS.PeerCertificates[0].Subject.CommonName+" at "+r.Host+r.URL.Path)
	})
	registered := map[string]string{
		"sup-1":      logviewer.URL,
		"sup/2":      logviewer.URL, // an id that needs escaping
		"sup-js":     "javascript:alert(1)",
		"sup-nologs": "",
		"sup-down":   "https://127.0.0.1:1", // nothing listens there
	}
	var mu sync.Mutex
	var asked []string
	lookup := func(_ context.Context, id string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, id)
		raw, ok := registered[id]
		if !ok {
			return "", errNoSuchSupervisor
		}
		return raw, nil
	}
	target, _ := url.Parse("https://127.0.0.1:1") // the nimbus: never reached here
	p := newUIProxy(target, 8001, testUIToken, u.alice, lookup)
	now := time.Unix(1_700_000_000, 0)
	p.logviewers.now = func() time.Time { return now }
	lvHost := strings.TrimPrefix(logviewer.URL, "https://")

	get := func(path string) *http.Response {
		return uiRequest(p, http.MethodGet, "127.0.0.1:8001", path, true, nil).Result()
	}
	read := func(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }

	resp := get("/logviewer/sup-1/api/v1/log?file=t-1-1%2F6700%2Fworker.log&start=0")
	want := "log of t-1-1/6700/worker.log for alice at " + lvHost + "/api/v1/log"
	if body := read(resp); resp.StatusCode != http.StatusOK || body != want {
		t.Fatalf("through the relay: %d %q, want %q", resp.StatusCode, body, want)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || len(resp.Cookies()) != 0 {
		t.Errorf("the logviewer's answer: CSP %q, cookies %v; want sandboxed, none set", csp, resp.Cookies())
	}
	if resp := get("/logviewer/sup%2F2/api/v1/listLogs"); resp.StatusCode != http.StatusOK || !strings.HasSuffix(read(resp), "/api/v1/listLogs") {
		t.Errorf("an escaped supervisor id: %d", resp.StatusCode)
	}
	if got := strings.Join(asked, ","); got != "sup-1,sup/2" {
		t.Fatalf("asked the nimbus about %q", got)
	}

	// Within logviewerURLTTL the nimbus is not asked again; after it, it is.
	get("/logviewer/sup-1/api/v1/log?file=a")
	now = now.Add(logviewerURLTTL)
	get("/logviewer/sup-1/api/v1/log?file=a")
	if got := strings.Join(asked, ","); got != "sup-1,sup/2,sup-1" {
		t.Fatalf("asked the nimbus about %q, want sup-1 again once only", got)
	}

	before := reached.Load()
	for _, tc := range []struct {
		path string
		code int
		says string
	}{
		{"/logviewer/sup-9/api/v1/log?file=a", http.StatusNotFound, `no such supervisor "sup-9"`},
		{"/logviewer/https:%2F%2Fevil.example/api/v1/log", http.StatusNotFound, `no such supervisor "https://evil.example"`},
		{"/logviewer/" + url.PathEscape(logviewer.URL) + "/api/v1/log", http.StatusNotFound, "no such supervisor"},
		{"/logviewer/sup-js/api/v1/log?file=a", http.StatusBadGateway, "logviewer_url"},
		{"/logviewer/sup-nologs/api/v1/log?file=a", http.StatusNotFound, "serves no logs"},
		{"/logviewer/", http.StatusNotFound, "<supervisor-id>"},
		{"/logviewer//api/v1/log", http.StatusNotFound, "<supervisor-id>"},
	} {
		resp := get(tc.path)
		if body := read(resp); resp.StatusCode != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.path, resp.StatusCode, body, tc.code, tc.says)
		}
	}
	// A logviewer that does not answer is a 502, and the nimbus is asked
	// again next time (the supervisor may serve elsewhere now).
	mu.Lock()
	asked = nil
	mu.Unlock()
	for range 2 {
		if resp := get("/logviewer/sup-down/api/v1/log?file=a"); resp.StatusCode != http.StatusBadGateway {
			t.Errorf("a logviewer that does not answer: %d, want 502", resp.StatusCode)
		}
	}
	if got := strings.Join(asked, ","); got != "sup-down,sup-down" {
		t.Errorf("asked the nimbus about %q, want sup-down each time", got)
	}
	sameOrigin := map[string]string{"Origin": "http://127.0.0.1:8001", "Sec-Fetch-Site": "same-origin"}
	if rec := uiRequest(p, http.MethodPost, "127.0.0.1:8001", "/logviewer/sup-1/api/v1/log", true, sameOrigin); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST to the relay: %d, want 405", rec.Code)
	}
	if n := reached.Load() - before; n != 0 {
		t.Fatalf("%d refused requests reached a logviewer", n)
	}
}
