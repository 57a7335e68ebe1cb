package validate

import (
	"errors"
	"strings"
	"testing"
)

func TestLinkURL(t *testing.T) {
	for _, ok := range []string{"https://host-1:8000", "http://10.0.0.1:8000", "https://[::1]:8000/logs", "https://h"} {
		if u, err := LinkURL("logviewer_url", ok); err != nil || u.String() != ok {
			t.Errorf("%q: %v, %v", ok, u, err)
		}
	}
	for _, bad := range []string{
		"", "javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "JAVASCRIPT://host/%0aalert(1)",
		"file:///etc/passwd", "ftp://host", "//host:8000", "host:8000", "https://", "https://:8000",
		"https://user:pw@host", "https://host?x=1", "https://host?", "https://host#frag", "https://host/\x00",
		"https://" + strings.Repeat("a", 3000),
	} {
		_, err := LinkURL("logviewer_url", bad)
		var ve *Error
		if !errors.As(err, &ve) || ve.Field != "logviewer_url" {
			t.Errorf("%q: %v, want an *Error naming logviewer_url", bad, err)
		}
	}
}

// FuzzLinkURL: whatever a supervisor registers, what LinkURL accepts is
// an http(s) URL with a host that prints back as a base (no query, no
// fragment), so a link built on it stays on that host.
func FuzzLinkURL(f *testing.F) {
	for _, s := range []string{"https://host-1:8000", "javascript:alert(1)", "https://u@h", "http://h/p?q#f", "HTTP://H"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := LinkURL("logviewer_url", raw)
		if err != nil {
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("%q accepted as %#v", raw, u)
		}
	})
}
