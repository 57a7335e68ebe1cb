package stormapi

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Storm's UI has no blobstore route: GET /blobstore and /blobstore/:key are
// Nimbus-HA's, in the API's manner. They answer ListBlobs of this nimbus,
// which reads its cache and keeps the blobs the caller may read.

// blobJSON is one blob of GET /blobstore, and the body of GET
// /blobstore/:key.
type blobJSON struct {
	Key        string `json:"key"`
	EncodedKey string `json:"encodedKey"` // for a path: a key may hold spaces
	Version    int64  `json:"version"`
	// ContentSha256 is the content's SHA-256 in hex: what the version is.
	ContentSha256     string   `json:"contentSha256"`
	Size              int64    `json:"size"` // bytes
	Owner             string   `json:"owner"`
	ACL               []string `json:"acl"` // Storm's entries: "u:alice:rwa", "o::r--"
	ReplicationFactor int32    `json:"replicationFactor"`
	// ReplicationCount is how many nimbuses hold this version, verified.
	ReplicationCount int32 `json:"replicationCount"`
	// State is OK, UNDER_REPLICATED (fewer nimbuses than the factor hold
	// it) or LOST (none does).
	State         string `json:"state"`
	CreatedUnixMs int64  `json:"createdUnixMs"`
	UpdatedUnixMs int64  `json:"updatedUnixMs"`
	// UsedBy are the live topologies whose topology.blobstore.map names
	// the blob. Only the leader knows them: null on another nimbus.
	UsedBy []string `json:"usedBy"`
}

func blobOf(b *nimbusv1.BlobInfo, leads bool) blobJSON {
	out := blobJSON{
		Key: b.GetKey(), EncodedKey: url.PathEscape(b.GetKey()), Version: b.GetVersion(),
		ContentSha256: hex.EncodeToString(b.GetContentSha256()), Size: b.GetSize(), Owner: b.GetOwner(),
		ACL: nonNil(b.GetAcl()), ReplicationFactor: b.GetReplicationFactor(), ReplicationCount: b.GetReplicationCount(),
		State: b.GetState(), CreatedUnixMs: b.GetCreatedUnixMs(), UpdatedUnixMs: b.GetUpdatedUnixMs(),
	}
	if leads {
		out.UsedBy = nonNil(b.GetUsedBy())
	}
	return out
}

// blobs answers GET /api/v1/blobstore: every blob the caller may read,
// by key.
func (a *API) blobs(r *request) ([]byte, error) {
	resp, err := a.cfg.Reads.ListBlobs(r.ctx, &nimbusv1.ListBlobsRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]blobJSON, 0, len(resp.GetBlobs()))
	for _, b := range resp.GetBlobs() {
		out = append(out, blobOf(b, r.state.Leads))
	}
	return json.Marshal(struct {
		Blobs []blobJSON `json:"blobs"`
	}{out})
}

// blob answers GET /api/v1/blobstore/:key. A blob the caller may not read
// is answered in the words of one that does not exist, so that the answer
// does not tell whether the key is taken.
func (a *API) blob(r *request) ([]byte, error) {
	key := r.PathValue("key")
	if err := validate.BlobKey("key", key); err != nil {
		return nil, err
	}
	notFound := apistatus.ToStatus(fmt.Errorf("%w: no blob you may read has the key %s", apierr.ErrBlobNotFound, quoted(key)))
	resp, err := a.cfg.Reads.ListBlobs(r.ctx, &nimbusv1.ListBlobsRequest{Keys: []string{key}})
	if apistatus.HTTPStatus(err) == http.StatusNotFound {
		return nil, notFound // in the same words as a blob left out
	}
	if err != nil {
		return nil, err
	}
	for _, b := range resp.GetBlobs() {
		if b.GetKey() == key {
			return json.Marshal(blobOf(b, r.state.Leads))
		}
	}
	return nil, notFound
}
