package stormapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// fakeReads answers the API's reads from fixed responses: one cluster,
// and topology infos by name (a name it lacks is not found).
type fakeReads struct {
	cluster *nimbusv1.GetClusterInfoResponse
	infos   map[string]*nimbusv1.GetTopologyInfoResponse
	infoErr error // answered by GetTopologyInfo instead, if set
}

func (f *fakeReads) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return f.cluster, nil
}

func (f *fakeReads) GetTopologyInfo(_ context.Context, req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
	if f.infoErr != nil {
		return nil, f.infoErr
	}
	if info, ok := f.infos[req.GetName()]; ok {
		return info, nil
	}
	return nil, apierr.ErrNotFound
}

func (f *fakeReads) GetTopologyConf(context.Context, *nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error) {
	return nil, apierr.ErrNotFound
}

func (f *fakeReads) GetNimbusConfig(context.Context, *nimbusv1.GetNimbusConfigRequest) (*nimbusv1.GetNimbusConfigResponse, error) {
	return &nimbusv1.GetNimbusConfigResponse{}, nil
}

// newTestAPI is an API over reads with security off.
func newTestAPI(t *testing.T, reads Reader) *API {
	t.Helper()
	authz, err := auth.New(configs.Default(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Reads: reads, Authz: authz, State: func() State { return State{} }})
}

// get serves GET path (to Host localhost) and decodes the answer.
func get(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil))
	body, _ := io.ReadAll(rec.Body)
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	return rec.Code, out
}
