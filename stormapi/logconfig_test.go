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

// logConfigActor records the SetLogConfig request it is sent and answers
// what it sets.
type logConfigActor struct {
	countingActor
	got *nimbusv1.SetLogConfigRequest
}

func (a *logConfigActor) SetLogConfig(_ context.Context, req *nimbusv1.SetLogConfigRequest) (*nimbusv1.SetLogConfigResponse, error) {
	a.calls++
	a.got = req
	return &nimbusv1.SetLogConfigResponse{LogLevels: req.GetSet()}, nil
}

// POST /topology/:id/logconfig takes Storm's body: a target level sets a
// logger (with its reset level and timeout), a null one removes it; a
// level that is none of log4j's, or a body of another shape, is a 400
// naming the field, and nothing is sent to the leader.
func TestSetLogConfigTakesStormsBody(t *testing.T) {
	actor := &logConfigActor{}
	reads := &fakeReads{cluster: &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
		Topologies: []*nimbusv1.TopologySummary{{Id: "wc-1", Name: "wc"}},
	}}}
	api := newTestAPI(t, reads)
	api.cfg.Actions, api.cfg.ActionsEnabled = actor, true
	api.cfg.State = func() State { return State{Leader: "127.0.0.1:6627"} }
	post := func(body string) (int, map[string]any) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/api/v1/topology/wc-1/logconfig", strings.NewReader(body))
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}

	code, out := post(`{"namedLoggerLevels": {"ROOT": {"target_level": "DEBUG", "reset_level": "INFO", "timeout": 30}, "com.x": {"target_level": null}}}`)
	if code != http.StatusOK {
		t.Fatalf("POST: %d %v", code, out)
	}
	root := actor.got.GetSet()["ROOT"]
	if actor.got.GetName() != "wc" || root.GetTargetLevel() != "DEBUG" || root.GetResetLevel() != "INFO" || root.GetTimeoutSecs() != 30 ||
		len(actor.got.GetRemove()) != 1 || actor.got.GetRemove()[0] != "com.x" {
		t.Errorf("sent %v", actor.got)
	}
	if lv, _ := out["namedLoggerLevels"].(map[string]any)["ROOT"].(map[string]any); lv["target_level"] != "DEBUG" || lv["timeout"] != 30.0 {
		t.Errorf("answered %v", out)
	}

	actor.calls = 0
	for body, field := range map[string]string{
		`{"namedLoggerLevels": {"ROOT": {"target_level": "LOUD"}}}`:          `set["ROOT"].target_level`,
		`{"namedLoggerLevels": {"ROOT": {"target_level": "DEBUG", "x": 1}}}`: "body",
		`{"namedLoggerLevels": {}}`:                                          "set",
		`[1, 2]`:                                                             "body",
	} {
		if code, out := post(body); code != http.StatusBadRequest || !strings.Contains(out["errorMessage"].(string), field) {
			t.Errorf("POST %s: %d %v, want 400 naming %s", body, code, out, field)
		}
	}
	if actor.calls != 0 {
		t.Errorf("refused bodies sent %d requests", actor.calls)
	}
}
