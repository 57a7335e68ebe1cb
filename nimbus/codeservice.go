package nimbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/codedistributor"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// codeService serves this nimbus's local code to peers and supervisors.
// It hashes what it sends: a local copy found corrupt is reported to
// codesync, which stops advertising it and fetches it again (the
// downloader, which verifies too, moves on to another replica).
type codeService struct {
	nimbusv1.UnimplementedCodeServiceServer
	store     *codedistributor.Store
	onCorrupt func(topologyID string)
	sent      prometheus.Counter
}

// NewCodeService serves store's code; onCorrupt hears of a local copy
// found corrupt while being served (codesync's Invalidate); sent, if not
// nil, counts the bytes served.
func NewCodeService(store *codedistributor.Store, onCorrupt func(topologyID string), sent prometheus.Counter) nimbusv1.CodeServiceServer {
	return &codeService{store: store, onCorrupt: onCorrupt, sent: sent}
}

func (c *codeService) GetCodeMeta(_ context.Context, req *nimbusv1.GetCodeMetaRequest) (*nimbusv1.GetCodeMetaResponse, error) {
	if err := validateTopologyID("topology_id", req.GetTopologyId()); err != nil {
		return nil, toStatus(err)
	}
	data, _, _, err := c.store.Meta(req.GetTopologyId())
	if err != nil {
		return nil, toStatus(err)
	}
	return &nimbusv1.GetCodeMetaResponse{Meta: data}, nil
}

func (c *codeService) DownloadCode(req *nimbusv1.DownloadCodeRequest, stream nimbusv1.CodeService_DownloadCodeServer) error {
	id := req.GetTopologyId()
	if err := validateTopologyID("topology_id", id); err != nil {
		return toStatus(err)
	}
	if err := validateCodeFileName("file", req.GetFile()); err != nil {
		return toStatus(err)
	}
	f, want, err := c.store.Open(id, req.GetFile())
	if err != nil {
		return toStatus(err)
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, maxChunk)
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
			return toStatus(err)
		}
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, want.GetSha256()) {
		c.onCorrupt(id)
		return toStatus(fmt.Errorf("%w: %s/%s on this nimbus has SHA-256 %s, meta says %s",
			codedistributor.ErrCorrupt, id, req.GetFile(), codedistributor.Hex(sum), codedistributor.Hex(want.GetSha256())))
	}
	return nil
}
