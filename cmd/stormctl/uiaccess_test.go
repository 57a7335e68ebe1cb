package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The proxy's door: the printed URL's token buys the browser a cookie
// (HttpOnly, SameSite=Strict, this proxy's port) and a redirect that drops
// the token; any request with neither, with a wrong one, or with another
// proxy's cookie is refused with a page that says what to open, and
// nothing of it reaches the nimbus.
func TestUIProxyTokenForCookie(t *testing.T) {
	u := newUITLS(t)
	var forwarded atomic.Int32
	nimbus := u.serve(t, echo(&forwarded))
	target, _ := url.Parse(nimbus.URL)
	p := newUIProxy(target, 8001, testUIToken, u.alice, nil)

	for _, tc := range []struct{ path, location string }{
		{"/?token=" + testUIToken, "/"},
		{"/api/v1/topology/t-1-1?window=600&token=" + testUIToken, "/api/v1/topology/t-1-1?window=600"},
		{"//evil.example/?token=" + testUIToken, "/evil.example/"}, // never another host
		{"/%5Cevil.example?token=" + testUIToken, "/%5Cevil.example"},
	} {
		rec := uiRequest(p, http.MethodGet, "127.0.0.1:8001", tc.path, false, nil)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.location {
			t.Errorf("GET %s: %d to %q, want 303 to %q", tc.path, rec.Code, rec.Header().Get("Location"), tc.location)
			continue
		}
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("GET %s set %d cookies", tc.path, len(cookies))
		}
		c := cookies[0]
		if c.Name != "stormctl_ui_8001" || c.Value != testUIToken || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
			t.Errorf("GET %s: cookie %+v, want stormctl_ui_8001, HttpOnly, SameSite=Strict, Path=/", tc.path, c)
		}
	}

	refused := []struct {
		name, method, path string
		cookie             *http.Cookie
		header             map[string]string
	}{
		{"no cookie", http.MethodGet, "/", nil, nil},
		{"no cookie, the API", http.MethodGet, "/api/v1/cluster/summary", nil, map[string]string{"Accept": "application/json"}},
		{"a wrong token", http.MethodGet, "/?token=guess", nil, nil},
		{"an empty token", http.MethodGet, "/?token=", nil, nil},
		{"a wrong cookie", http.MethodGet, "/", &http.Cookie{Name: "stormctl_ui_8001", Value: "guess"}, nil},
		{"another proxy's cookie", http.MethodGet, "/", &http.Cookie{Name: "stormctl_ui_8002", Value: testUIToken}, nil},
		{"a POST with the token, no cookie", http.MethodPost, "/api/v1/topology/t-1-1/kill/0?token=" + testUIToken, nil, nil},
		{"the log relay without a cookie", http.MethodGet, "/logviewer/sup-1/api/v1/log?file=t-1-1%2F6700%2Fworker.log", nil, nil},
	}
	for _, tc := range refused {
		req := requestTo(tc.method, "127.0.0.1:8001", tc.path)
		if tc.cookie != nil {
			req.AddCookie(tc.cookie)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec := serveOne(p, req)
		body := rec.Body.String()
		if rec.Code != http.StatusUnauthorized || !strings.Contains(body, "open the URL that stormctl ui printed") || len(rec.Result().Cookies()) != 0 {
			t.Errorf("%s: %d %q, want 401 saying to open the printed URL, and no cookie", tc.name, rec.Code, body)
		}
		if tc.header["Accept"] == "application/json" {
			var e struct{ Error, ErrorMessage string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.ErrorMessage == "" {
				t.Errorf("%s: %q, want Storm's JSON error: %v", tc.name, body, err)
			}
		}
	}
	if n := forwarded.Load(); n != 0 {
		t.Fatalf("%d requests reached the nimbus, want none", n)
	}

	// The cookie the exchange set lets the browser in; the nimbus never
	// sees it.
	req := requestTo(http.MethodGet, "127.0.0.1:8001", "/api/v1/cluster/summary")
	req.AddCookie(&http.Cookie{Name: "stormctl_ui_8001", Value: testUIToken})
	if rec := serveOne(p, req); rec.Code != http.StatusOK || rec.Body.String() != "hello alice GET /api/v1/cluster/summary" {
		t.Fatalf("with the cookie: %d %q", rec.Code, rec.Body)
	}
}

func TestNewUIToken(t *testing.T) {
	a, b := newUIToken(), newUIToken()
	if a == b || len(a) < 22 || url.QueryEscape(a) != a {
		t.Fatalf("tokens %q and %q: want distinct, at least 128 bits, URL-safe", a, b)
	}
}
