package stormapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/authtest"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// lockedBuffer collects JSON log lines written from the server's
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// audits returns the audit lines written so far.
func (b *lockedBuffer) audits(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	text := b.buf.String()
	b.mu.Unlock()
	var out []map[string]any
	for l := range strings.Lines(text) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "audit" {
			out = append(out, m)
		}
	}
	return out
}

// forwardingActor is a countingActor that keeps the outgoing metadata of
// the deactivations it is asked for: what the leader would receive.
type forwardingActor struct {
	countingActor
	mu   sync.Mutex
	sent []metadata.MD
}

func (f *forwardingActor) DeactivateTopology(ctx context.Context, name string) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	f.mu.Lock()
	f.sent = append(f.sent, md)
	f.mu.Unlock()
	return f.countingActor.DeactivateTopology(ctx, name)
}

// secureAPI is an API with security on behind a real HTTPS server whose
// client certificates a test CA issues; its authorizer logs to log.
type secureAPI struct {
	ca    *authtest.CA
	srv   *httptest.Server
	log   *lockedBuffer
	actor *forwardingActor
}

// startSecureAPI serves an API with security on, one topology (wc, id
// wc-1), a leader, and actions enabled; edit, if not nil, changes that.
func startSecureAPI(t *testing.T, edit func(*Config)) *secureAPI {
	t.Helper()
	s := &secureAPI{ca: authtest.NewCA(t), log: &lockedBuffer{}, actor: &forwardingActor{}}
	cfg := configs.Default()
	cfg.TLSEnable, cfg.TLSClientAuthRequired = true, true
	authz, err := auth.New(cfg, slog.New(slog.NewJSONHandler(s.log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	reads := &fakeReads{cluster: &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
		Topologies: []*nimbusv1.TopologySummary{{Id: "wc-1", Name: "wc"}},
	}}}
	apiCfg := Config{Reads: reads, Actions: s.actor, Authz: authz, ActionsEnabled: true,
		State: func() State { return State{Leader: "127.0.0.1:6627"} }}
	if edit != nil {
		edit(&apiCfg)
	}
	api := New(apiCfg)
	s.srv = httptest.NewUnstartedServer(api)
	s.srv.TLS = s.ca.ServerConfig(t)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// do sends method path as who ("" for no certificate) with the headers
// hdr (Host among them), and returns the answer's code and the client's address as the
// server saw it.
func (s *secureAPI) do(t *testing.T, who, method, path, body string, hdr map[string]string) (code int, from string) {
	t.Helper()
	var certs []tls.Certificate
	if who != "" {
		certs = append(certs, s.ca.Client(t, who))
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: s.ca.ClientConfig(certs...)}}
	defer c.CloseIdleConnections()
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		from = info.Conn.LocalAddr().String()
	}})
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, from
}

// wantAuditLine fails unless line has want's attributes.
func wantAuditLine(t *testing.T, line map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got := line[k]; got != v {
			t.Errorf("audit %s = %v, want %v (line %v)", k, got, v, line)
		}
	}
}

// Every POST the answering nimbus refuses itself leaves one audit line
// naming the principal, the client's address (the connection's, not a
// header's), the action, the target and the outcome; a POST it takes
// too; GETs leave none.
func TestRESTRefusalsAreAudited(t *testing.T) {
	s := startSecureAPI(t, nil)
	crossSite := map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
	for _, tc := range []struct {
		name, who, method, path, body string
		hdr                           map[string]string
		code                          int
		want                          map[string]any
	}{
		{name: "a cross-origin POST", who: "alice", method: http.MethodPost, path: "/api/v1/topology/wc-1/deactivate", hdr: crossSite,
			code: http.StatusForbidden, want: map[string]any{"principal": "alice", "action": "deactivate", "target": "wc-1", "outcome": "PermissionDenied"}},
		{name: "an unknown topology", who: "alice", method: http.MethodPost, path: "/api/v1/topology/nope-9/kill/0",
			code: http.StatusNotFound, want: map[string]any{"principal": "alice", "action": "kill", "target": "nope-9", "outcome": "NotFound"}},
		{name: "a bad wait", who: "alice", method: http.MethodPost, path: "/api/v1/topology/wc-1/kill/soon",
			code: http.StatusBadRequest, want: map[string]any{"principal": "alice", "action": "kill", "target": "wc-1", "outcome": "InvalidArgument"}},
		{name: "a bad rebalance body", who: "alice", method: http.MethodPost, path: "/api/v1/topology/wc-1/rebalance/0",
			body: `{"rebalanceOptions": {"numWorkers": 0}}`,
			code: http.StatusBadRequest, want: map[string]any{"principal": "alice", "action": "rebalance", "target": "wc-1", "outcome": "InvalidArgument"}},
		{name: "no certificate", method: http.MethodPost, path: "/api/v1/topology/wc-1/activate",
			code: http.StatusUnauthorized, want: map[string]any{"principal": auth.Anonymous, "action": "activate", "outcome": "Unauthenticated"}},
		{name: "a Host of another name", who: "alice", method: http.MethodPost, path: "/api/v1/topology/wc-1/kill/0",
			hdr: map[string]string{"Host": "evil.example"}, code: http.StatusForbidden,
			want: map[string]any{"principal": "alice", "action": "kill", "outcome": "PermissionDenied"}},
		{name: "an unknown path", who: "alice", method: http.MethodPost, path: "/api/v1/topology/wc-1/explode",
			code: http.StatusNotFound, want: map[string]any{"principal": "alice", "action": "", "path": "/api/v1/topology/wc-1/explode", "outcome": "NotFound"}},
		{name: "a POST to a read", who: "alice", method: http.MethodPost, path: "/api/v1/cluster/summary",
			code: http.StatusMethodNotAllowed, want: map[string]any{"principal": "alice", "action": "", "outcome": "MethodNotAllowed"}},
		{name: "a claimed forwarded address", who: "alice", method: http.MethodPost, path: "/api/v1/topology/wc-1/deactivate",
			hdr: map[string]string{"X-Forwarded-For": "203.0.113.9"}, code: http.StatusOK,
			want: map[string]any{"principal": "alice", "action": "deactivate", "target": "wc-1", "outcome": "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.log.audits(t))
			code, from := s.do(t, tc.who, tc.method, tc.path, tc.body, tc.hdr)
			if code != tc.code {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
			}
			lines := s.log.audits(t)[before:]
			if len(lines) != 1 {
				t.Fatalf("%d audit lines, want 1: %v", len(lines), lines)
			}
			wantAuditLine(t, lines[0], tc.want)
			wantAuditLine(t, lines[0], map[string]any{"remote": from, "method": tc.method, "code": float64(tc.code)})
		})
	}

	before := len(s.log.audits(t))
	for _, path := range []string{"/api/v1/topology/summary", "/api/v1/topology/nope-9", "/api/v1/cluster/configuration"} {
		s.do(t, "alice", http.MethodGet, path, "", nil)
		s.do(t, "", http.MethodGet, path, "", nil)
	}
	if lines := s.log.audits(t)[before:]; len(lines) != 0 {
		t.Errorf("GETs were audited: %v", lines)
	}
}

// Refusals that depend on the nimbus's state, actions disabled and no
// leader, are audited alike, and take no action.
func TestRESTRefusalsOfStateAreAudited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*Config)
		code    int
		outcome string
	}{
		{"actions disabled", func(c *Config) { c.ActionsEnabled = false }, http.StatusForbidden, "PermissionDenied"},
		{"no leader", func(c *Config) { c.State = func() State { return State{} } }, http.StatusServiceUnavailable, "Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSecureAPI(t, tc.edit)
			code, from := s.do(t, "alice", http.MethodPost, "/api/v1/topology/wc-1/deactivate", "", nil)
			if code != tc.code {
				t.Fatalf("deactivate: %d, want %d", code, tc.code)
			}
			lines := s.log.audits(t)
			if len(lines) != 1 {
				t.Fatalf("%d audit lines, want 1: %v", len(lines), lines)
			}
			wantAuditLine(t, lines[0], map[string]any{"principal": "alice", "action": "deactivate", "target": "wc-1",
				"remote": from, "outcome": tc.outcome, "code": float64(tc.code)})
			if s.actor.calls != 0 {
				t.Errorf("a refused request took %d actions", s.actor.calls)
			}
		})
	}
}

// An action goes to the leader as the caller, with the caller's address
// as this nimbus saw it, for the leader's audit line (auth.Forward).
func TestActionCarriesTheCallersAddress(t *testing.T) {
	s := startSecureAPI(t, nil)
	code, from := s.do(t, "alice", http.MethodPost, "/api/v1/topology/wc-1/deactivate", "",
		map[string]string{"X-Forwarded-For": "203.0.113.9"})
	if code != http.StatusOK {
		t.Fatalf("deactivate: %d", code)
	}
	s.actor.mu.Lock()
	defer s.actor.mu.Unlock()
	if len(s.actor.sent) != 1 {
		t.Fatalf("%d deactivations reached the leader, want 1", len(s.actor.sent))
	}
	md := s.actor.sent[0]
	if got := md.Get("nimbus-forwarded-for"); len(got) != 1 || got[0] != "alice" {
		t.Errorf("forwarded for %v, want [alice]", got)
	}
	if got := md.Get("nimbus-forwarded-client"); len(got) != 1 || got[0] != from {
		t.Errorf("forwarded client %v, want [%s], the connection's address", got, from)
	}
}
