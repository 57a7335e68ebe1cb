package stormapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// fakeReads answers the API's reads from fixed responses: one cluster,
// and topology infos by name (a name it lacks is not found).
type fakeReads struct {
	cluster *nimbusv1.GetClusterInfoResponse
	infos   map[string]*nimbusv1.GetTopologyInfoResponse
	infoErr error // answered by GetTopologyInfo instead, if set
	// blobs are ListBlobs' blobs; with authz set, only those the
	// authorizer lets the caller read by their ACL, as the nimbus answers.
	blobs []*nimbusv1.BlobInfo
	authz *auth.Authorizer
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

// ListBlobs answers as the nimbus's ListBlobs does: a named key that no
// blob has is not found, one the caller may not read is left out.
func (f *fakeReads) ListBlobs(ctx context.Context, req *nimbusv1.ListBlobsRequest) (*nimbusv1.ListBlobsResponse, error) {
	if err := validate.ListBlobs(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	resp := &nimbusv1.ListBlobsResponse{}
	for _, b := range f.blobs {
		if len(req.GetKeys()) > 0 && !slices.Contains(req.GetKeys(), b.GetKey()) {
			continue
		}
		if f.authz == nil || f.authz.May(ctx, auth.ActionReadBlob, readersOf(b)) {
			resp.Blobs = append(resp.Blobs, b)
		}
	}
	for _, key := range req.GetKeys() {
		if !slices.ContainsFunc(f.blobs, func(b *nimbusv1.BlobInfo) bool { return b.GetKey() == key }) {
			return nil, apistatus.ToStatus(fmt.Errorf("%w: %q", apierr.ErrBlobNotFound, key))
		}
	}
	return resp, nil
}

// readersOf is the authorizer's target for reading b: its owner and whom
// its ACL grants r.
func readersOf(b *nimbusv1.BlobInfo) auth.Target {
	t := auth.Target{Topology: b.GetKey(), Owner: b.GetOwner()}
	entries, _ := validate.BlobACL("acl", b.GetAcl())
	for _, e := range entries {
		switch {
		case e.Perm&validate.BlobRead == 0:
		case e.Other:
			t.Anyone = true
		default:
			t.Grantees = append(t.Grantees, e.User)
		}
	}
	return t
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
