package codeservice

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/codedistributor"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// chunkSize is the largest chunk sent; the same as a submission's.
const chunkSize = 1 << 20

// server is the CodeService of one node's store.
type server struct {
	nimbusv1.UnimplementedCodeServiceServer
	store  *codedistributor.Store
	blobs  *codedistributor.Store // nil: serves no blobs (WithBlobs)
	sent   prometheus.Counter
	auth   *auth.Authorizer // nil: no checks (WithAuthorizer)
	action auth.Action      // what a caller asks to do (WithAction)
}

// New serves store's code; sent, if not nil, counts the bytes served.
func New(store *codedistributor.Store, sent prometheus.Counter, opts ...Option) nimbusv1.CodeServiceServer {
	s := &server{store: store, sent: sent, action: auth.ActionFetchCode}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (c *server) GetCodeMeta(ctx context.Context, req *nimbusv1.GetCodeMetaRequest) (*nimbusv1.GetCodeMetaResponse, error) {
	store, err := c.admit(ctx, req.GetTopologyId(), req.GetBlob())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	data, _, _, err := store.Meta(req.GetTopologyId())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return &nimbusv1.GetCodeMetaResponse{Meta: data}, nil
}

func (c *server) DownloadCode(req *nimbusv1.DownloadCodeRequest, stream nimbusv1.CodeService_DownloadCodeServer) error {
	id := req.GetTopologyId()
	if err := validate.CodeFileName("file", req.GetFile()); err != nil {
		return apistatus.ToStatus(err)
	}
	store, err := c.admit(stream.Context(), id, req.GetBlob())
	if err != nil {
		return apistatus.ToStatus(err) // before a byte is sent
	}
	f, want, err := store.Open(id, req.GetFile())
	if err != nil {
		return apistatus.ToStatus(err)
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, chunkSize)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if err := stream.Send(&nimbusv1.DownloadCodeResponse{Chunk: buf[:n]}); err != nil {
				return err
			}
			if c.sent != nil {
				c.sent.Add(float64(n))
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return apistatus.ToStatus(err)
		}
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, want.GetSha256()) {
		store.ReportCorrupt(id)
		return apistatus.ToStatus(fmt.Errorf("%w: %s/%s on this nimbus has SHA-256 %s, meta says %s",
			codedistributor.ErrCorrupt, id, req.GetFile(), codedistributor.Hex(sum), codedistributor.Hex(want.GetSha256())))
	}
	return nil
}

// admit checks a request's id and its caller, and returns the store that
// serves it: the blob store for a blob's bundle (id is then its key),
// else the code store.
func (c *server) admit(ctx context.Context, id string, blob bool) (*codedistributor.Store, error) {
	if !blob {
		if err := validate.TopologyID("topology_id", id); err != nil {
			return nil, err
		}
		return c.store, c.authorize(ctx, id)
	}
	if err := validate.BlobKey("topology_id", id); err != nil {
		return nil, err
	}
	if c.blobs == nil {
		return nil, fmt.Errorf("%w: this node serves no blobs", codedistributor.ErrNotHeld)
	}
	if c.auth != nil && c.auth.Enabled() {
		// Only the nodes that place blobs (and admins) fetch bundles, and
		// from a supervisor's store only the nimbuses that recover them;
		// users read blobs through ReadBlob, which applies the ACL.
		act := auth.ActionReadBlob
		if c.action == auth.ActionRecoverCode {
			act = c.action
		}
		if err := c.auth.Blob(ctx, act, auth.Target{Topology: id}); err != nil {
			return nil, err
		}
	}
	return c.blobs, nil
}

// authorize answers whether the caller may fetch the code of topology id:
// with authentication on, by the owner and topology.users in the spec
// stored with that code.
func (c *server) authorize(ctx context.Context, id string) error {
	if c.auth == nil || !c.auth.Enabled() {
		return nil
	}
	spec, err := ReadSpec(c.store, id)
	if err != nil {
		return err
	}
	return c.auth.Topology(ctx, c.action, id, spec.GetOwner(), auth.TopologyUsers(spec.GetConfig()))
}
