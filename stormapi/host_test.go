package stormapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// countingActor counts the actions it is asked to take.
type countingActor struct{ calls int }

func (c *countingActor) ActivateTopology(context.Context, string) error   { c.calls++; return nil }
func (c *countingActor) DeactivateTopology(context.Context, string) error { c.calls++; return nil }
func (c *countingActor) KillTopology(context.Context, *nimbusv1.KillTopologyRequest) error {
	c.calls++
	return nil
}
func (c *countingActor) RebalanceTopology(context.Context, *nimbusv1.RebalanceTopologyRequest) error {
	c.calls++
	return nil
}
func (c *countingActor) HandOver(context.Context, string) (*nimbusv1.HandOverResponse, error) {
	c.calls++
	return &nimbusv1.HandOverResponse{}, nil
}
func (c *countingActor) RestartWorker(context.Context, string, string) (*nimbusv1.RestartWorkerResponse, error) {
	c.calls++
	return &nimbusv1.RestartWorkerResponse{}, nil
}
func (c *countingActor) SetLogConfig(context.Context, *nimbusv1.SetLogConfigRequest) (*nimbusv1.SetLogConfigResponse, error) {
	c.calls++
	return &nimbusv1.SetLogConfigResponse{}, nil
}

// The reproduction of DNS rebinding: a page of evil.example, its name
// rebound to 127.0.0.1, POSTs a kill to a plaintext UI on loopback, as
// same-origin (no Origin, Sec-Fetch-Site: same-origin). The API refuses
// it, 403 naming the Host, and kills nothing; reads are refused alike.
// The names the nimbus answers to pass.
func TestHostNotOfThisNimbusIsRefused(t *testing.T) {
	actor := &countingActor{}
	reads := &fakeReads{cluster: &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
		Topologies: []*nimbusv1.TopologySummary{{Id: "wc-1", Name: "wc"}},
	}}}
	api := newTestAPI(t, reads)
	api.cfg.Actions, api.cfg.ActionsEnabled = actor, true
	api.cfg.State = func() State { return State{Leader: "127.0.0.1:6627"} }
	api.cfg.HostNames = func() []string { return []string{"nimbus1.example.com"} }
	do := func(method, host, path string) (int, string) {
		req := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, nil)
		req.Host = host
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		msg, _ := out["errorMessage"].(string)
		return rec.Code, msg
	}

	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/topology/wc-1/kill/0"},
		{http.MethodGet, "/api/v1/topology/summary"},
	} {
		code, msg := do(tc.method, "evil.example:8080", tc.path)
		if code != http.StatusForbidden || !strings.Contains(msg, `Host "evil.example:8080"`) {
			t.Errorf("%s %s with Host evil.example: %d %q, want 403 naming the Host", tc.method, tc.path, code, msg)
		}
	}
	if actor.calls != 0 {
		t.Fatalf("a refused request took %d actions", actor.calls)
	}

	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "10.1.2.3",
		"nimbus1.example.com:8080", "nimbus1.example.com.", "app.localhost:8080", ""} {
		if code, msg := do(http.MethodGet, host, "/api/v1/topology/summary"); code != http.StatusOK {
			t.Errorf("Host %q: %d %q, want 200", host, code, msg)
		}
	}
	if code, _ := do(http.MethodPost, "localhost:8080", "/api/v1/topology/wc-1/kill/0"); code != http.StatusOK || actor.calls != 1 {
		t.Errorf("kill with Host localhost: %d, %d actions; want 200 and 1", code, actor.calls)
	}
}
