package codedistributor

import (
	"context"
	"fmt"
	"os"
	"time"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// metaTimeout bounds one GetCodeMeta call; a meta is small.
const metaTimeout = 10 * time.Second

// Fetcher installs verified code into a Store: the meta from any replica,
// checked against its digest; the files through the Distributor, each
// checked against the meta; then an atomic install.
type Fetcher struct {
	Params Params
	Dist   Distributor
	Store  *Store
}

// Fetch makes the store hold the code of topologyID whose meta has digest.
func (f *Fetcher) Fetch(ctx context.Context, topologyID string, digest []byte) error {
	p := f.Params
	sources, err := Sources(p.Session, topologyID, digest, p.Self)
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("%w: no other replica holds %s with meta %s", ErrNotHeld, topologyID, Hex(digest))
	}
	var meta *nimbusv1.GetCodeMetaResponse
	var lastErr error
	for _, addr := range sources {
		if meta, lastErr = f.meta(ctx, addr, topologyID, digest); lastErr == nil {
			break
		}
		p.Logger.Warn("cannot get code meta from replica; trying the next", "topology", topologyID, "replica", addr, "err", lastErr)
	}
	if lastErr != nil {
		return fmt.Errorf("codedistributor: meta of %s from %v: %w", topologyID, sources, lastErr)
	}
	code := Code{TopologyID: topologyID, Digest: digest}
	if code.Meta, err = DecodeMeta(meta.GetMeta(), digest); err != nil {
		return err
	}
	tmp, err := f.Store.NewTemp()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once installed
	start := time.Now()
	if err := f.Dist.Download(ctx, tmp, code); err != nil {
		return err
	}
	if _, err := f.Store.Install(tmp, topologyID, code.Meta); err != nil {
		return err
	}
	var size int64
	for _, file := range code.Meta.GetFiles() {
		size += file.GetSize()
	}
	p.Logger.Info("code fetched", "component", "codedistributor", "topology", topologyID, "bytes", size, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

func (f *Fetcher) meta(ctx context.Context, addr, topologyID string, digest []byte) (*nimbusv1.GetCodeMetaResponse, error) {
	client, err := f.Params.Peers.Code(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	resp, err := client.GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: topologyID})
	if err != nil {
		return nil, err
	}
	if _, err := DecodeMeta(resp.GetMeta(), digest); err != nil {
		return nil, err
	}
	return resp, nil
}
