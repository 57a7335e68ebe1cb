package webui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkSecurityHeaders(t *testing.T, path string, resp *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-cache",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", path, k, got, v)
		}
	}
}

func TestIndex(t *testing.T) {
	h := Handler()
	resp := get(t, h, http.MethodGet, "/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("GET /: Content-Type %q", ct)
	}
	checkSecurityHeaders(t, "/", resp)
	page := body(t, resp)
	for _, want := range []string{`<script src="static/app.js" defer></script>`, `<link rel="stylesheet" href="static/style.css">`, `<dialog id="confirm"`, `id="confirm-ok"`, `id="confirm-cancel"`, `id="freshness"`, `id="no-leader"`} {
		if !strings.Contains(page, want) {
			t.Errorf("GET /: the page lacks %s", want)
		}
	}

	// Revalidation with the ETag.
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("GET /: no ETag")
	}
	again := get(t, h, http.MethodGet, "/", http.Header{"If-None-Match": {etag}})
	if again.StatusCode != http.StatusNotModified {
		t.Errorf("GET / with If-None-Match: %d, want 304", again.StatusCode)
	}

	if resp := get(t, h, http.MethodHead, "/", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /: %d", resp.StatusCode)
	}
	if resp := get(t, h, http.MethodPost, "/", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
}

func TestAssets(t *testing.T) {
	h := Handler()
	for path, ct := range map[string]string{
		"/static/app.js":    "text/javascript; charset=utf-8",
		"/static/style.css": "text/css; charset=utf-8",
	} {
		resp := get(t, h, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ct)
		}
		checkSecurityHeaders(t, path, resp)
		want, err := fs.ReadFile(embedded, "static"+strings.TrimPrefix(path, "/static"))
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, resp); got != string(want) {
			t.Errorf("GET %s: served %d bytes, want the embedded %d", path, len(got), len(want))
		}
	}
}

func TestUnknownPathsAreNotFound(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/nosuch", "/index.html", "/static/", "/static/nosuch.js", "/static/index.html", "/api/v1/cluster/summary"} {
		resp := get(t, h, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
		checkSecurityHeaders(t, path, resp)
	}
}

// TestStaticIsSelfContained: nothing under static/ loads anything from
// elsewhere (no CDN), and nothing needs what the CSP forbids (inline
// scripts, inline styles, event handler attributes, innerHTML).
func TestStaticIsSelfContained(t *testing.T) {
	forbidden := []struct {
		re   *regexp.Regexp
		what string
	}{
		{regexp.MustCompile(`(?i)https?://`), "an http(s) URL"},
		{regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>[^<\s]`), "an inline script"},
		{regexp.MustCompile(`(?i)<style`), "an inline style element"},
		{regexp.MustCompile(`(?i)\sstyle\s*=`), "a style attribute"},
		{regexp.MustCompile(`(?i)\son[a-z]+\s*=\s*["']`), "an event handler attribute"},
		{regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write`), "HTML parsing of strings"},
		{regexp.MustCompile(`\beval\(|new Function\(`), "eval"},
	}
	n := 0
	err := fs.WalkDir(embedded, "static", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		data, err := fs.ReadFile(embedded, name)
		if err != nil {
			return err
		}
		for _, f := range forbidden {
			if loc := f.re.FindIndex(data); loc != nil {
				line := strings.Count(string(data[:loc[0]]), "\n") + 1
				t.Errorf("%s:%d: %s (%q)", name, line, f.what, data[loc[0]:loc[1]])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Fatalf("static/ holds %d files, want index.html, app.js and style.css at least", n)
	}
}
