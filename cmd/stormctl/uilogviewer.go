package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/validate"
)

// stormctl ui's log relay: a worker's log link points at its supervisor's
// logviewer, which wants a client certificate the browser lacks. The
// proxy answers /logviewer/<supervisor-id>/<path> by forwarding <path> to
// that supervisor's logviewer at the URL the nimbus has registered for it
// (never a URL the request names), with the user's certificate. The UI
// page learns that it may link there from a header on every answer the
// proxy relays from the nimbus (uiLogviewerHeader).

const (
	// logviewerRelayPath is where the relay answers on the proxy.
	logviewerRelayPath = "/logviewer/"
	// uiLogviewerHeader, on the nimbus's answers through the proxy, tells
	// the page the relay's path relative to itself; the nimbus never sets
	// it, so a page served directly links straight to the logviewers.
	uiLogviewerHeader = "X-Stormctl-Ui-Logviewer"
	// logviewerURLTTL is how long the relay trusts what the nimbus said a
	// supervisor's logviewer is: a supervisor started again may serve
	// on another port.
	logviewerURLTTL = 10 * time.Second
)

// errNoSuchSupervisor: the nimbus knows no supervisor of that id.
var errNoSuchSupervisor = errors.New("no such supervisor")

// logviewerLookup returns the logviewer_url a nimbus has registered for
// supervisor id ("" when it serves no logs), or errNoSuchSupervisor.
type logviewerLookup func(ctx context.Context, id string) (string, error)

// nimbusLogviewers asks c's nimbuses (GetClusterInfo, that supervisor
// only).
func nimbusLogviewers(c *client.Client) logviewerLookup {
	return func(ctx context.Context, id string) (string, error) {
		resp, err := c.GetClusterInfo(ctx, client.WithoutNimbuses(), client.WithoutTopologies(), client.OnlySupervisors(id))
		if err != nil {
			return "", err
		}
		for _, s := range resp.GetCluster().GetSupervisors() {
			if s.GetSupervisorId() == id { // the filter also matches hosts
				return s.GetLogviewerUrl(), nil
			}
		}
		return "", errNoSuchSupervisor
	}
}

// logviewerRelay forwards to supervisors' logviewers. It is safe for
// concurrent use.
type logviewerRelay struct {
	lookup    logviewerLookup
	transport http.RoundTripper
	now       func() time.Time

	mu    sync.Mutex
	known map[string]knownLogviewer // by supervisor id; only ids the nimbus confirmed
}

// knownLogviewer is what the nimbus said, and when.
type knownLogviewer struct {
	base *url.URL
	at   time.Time
}

// newLogviewerRelay presents tlsm's certificate to each logviewer and
// verifies it for its own host (tlsm nil: TLS off).
func newLogviewerRelay(lookup logviewerLookup, tlsm *certs.Reloader) *logviewerRelay {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if tlsm != nil {
		tr.DialTLSContext = tlsm.DialTLSContext
	}
	return &logviewerRelay{lookup: lookup, transport: tr, now: time.Now, known: map[string]knownLogviewer{}}
}

// ServeHTTP relays r, whose path is under logviewerRelayPath, in steps:
// split the path, find the supervisor's logviewer, forward.
func (l *logviewerRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, rest, ok := splitRelayPath(r.URL.EscapedPath())
	if !ok {
		http.Error(w, "stormctl ui: want "+logviewerRelayPath+"<supervisor-id>/api/v1/... (a worker's log link on the UI)", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "stormctl ui: the logviewer answers GET only", http.StatusMethodNotAllowed)
		return
	}
	base, err := l.resolve(r.Context(), id)
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, errNoSuchSupervisor) {
			code = http.StatusNotFound
		}
		http.Error(w, "stormctl ui: "+err.Error(), code)
		return
	}
	l.forward(w, r, id, base, rest)
}

// splitRelayPath splits /logviewer/<id>/<rest> (escaped) into the
// supervisor id and the escaped path to ask its logviewer for.
func splitRelayPath(escaped string) (id, rest string, ok bool) {
	after, ok := strings.CutPrefix(escaped, logviewerRelayPath)
	if !ok {
		return "", "", false
	}
	escID, rest, _ := strings.Cut(after, "/")
	id, err := url.PathUnescape(escID)
	if err != nil || id == "" {
		return "", "", false
	}
	return id, "/" + rest, true
}

// resolve is supervisor id's logviewer as the nimbus registered it, asked
// again once logviewerURLTTL has passed.
func (l *logviewerRelay) resolve(ctx context.Context, id string) (*url.URL, error) {
	l.mu.Lock()
	k, ok := l.known[id]
	l.mu.Unlock()
	if ok && l.now().Sub(k.at) < logviewerURLTTL {
		return k.base, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := l.lookup(ctx, id)
	switch {
	case errors.Is(err, errNoSuchSupervisor):
		l.forget(id)
		return nil, fmt.Errorf("%w %q known to the nimbus", errNoSuchSupervisor, id)
	case err != nil:
		return nil, fmt.Errorf("asking the nimbus where supervisor %q's logviewer is: %w", id, err)
	case raw == "":
		l.forget(id)
		return nil, fmt.Errorf("%w: supervisor %q serves no logs (logviewer.port -1)", errNoSuchSupervisor, id)
	}
	base, err := validate.LinkURL("logviewer_url", raw)
	if err != nil {
		l.forget(id)
		return nil, fmt.Errorf("supervisor %q registered no usable logviewer: %w", id, err)
	}
	l.mu.Lock()
	l.known[id] = knownLogviewer{base: base, at: l.now()}
	l.mu.Unlock()
	return base, nil
}

func (l *logviewerRelay) forget(id string) {
	l.mu.Lock()
	delete(l.known, id)
	l.mu.Unlock()
}

// forward sends r to rest on the logviewer at base. What comes back is
// shown on the proxy's origin, where the UI acts as the user, so it is
// sandboxed: a worker's output never runs as a script there.
func (l *logviewerRelay) forward(w http.ResponseWriter, r *http.Request, id string, base *url.URL, rest string) {
	p := &httputil.ReverseProxy{
		Transport: l.transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.RawPath = rest
			pr.Out.URL.Path, _ = url.PathUnescape(rest) // splitRelayPath unescaped its id the same way
			pr.SetURL(base)
			dropBrowserHeaders(pr.Out.Header)
		},
		ModifyResponse: func(resp *http.Response) error {
			h := resp.Header
			h.Del("Set-Cookie")
			h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
			h.Set("X-Content-Type-Options", "nosniff")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			l.forget(id) // it may have started again elsewhere: ask the nimbus next time
			http.Error(w, fmt.Sprintf("stormctl ui: supervisor %q's logviewer at %s: %v", id, base, err), http.StatusBadGateway)
		},
	}
	p.ServeHTTP(w, r)
}

// dropBrowserHeaders removes what the proxy has checked or must keep to
// itself: the browser's origin headers (the proxy checked them against
// its own origin; the server would compare them with its own) and its
// cookies (the proxy's token).
func dropBrowserHeaders(h http.Header) {
	for _, k := range []string{"Origin", "Referer", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User", "Cookie"} {
		h.Del(k)
	}
}
