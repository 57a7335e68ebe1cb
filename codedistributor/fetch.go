package codedistributor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// metaTimeout bounds one GetCodeMeta call; a meta is small.
const metaTimeout = 10 * time.Second

// Fetcher installs verified code into a Store: the meta from any source,
// checked against its digest; the files through the Distributor, each
// checked against the meta; then an atomic install.
type Fetcher struct {
	Params Params
	Dist   Distributor
	Store  *Store
	// Kind is what the store holds; a blob's key stands for the topology
	// id in every method.
	Kind Kind
}

// Fetch makes the store hold the code of topologyID whose meta has digest,
// from the nimbus replicas that hold it.
func (f *Fetcher) Fetch(ctx context.Context, topologyID string, digest []byte) error {
	sources, err := f.replicaSources(topologyID, digest)
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("%w: no other replica holds %s with meta %s", ErrNotHeld, topologyID, Hex(digest))
	}
	_, err = f.fetchFrom(ctx, topologyID, digest, sources)
	return err
}

// Recover is Fetch for a topology the cluster has committed (it is in
// /storms): when no nimbus replica holds digest, it asks the supervisors,
// which keep a verified copy of what they run, and verifies what they send
// against the same digest. It returns where the code came from; the error
// wraps ErrHeldNowhere when no nimbus and no supervisor answered with it.
// Only nimbuses recover: a supervisor never fetches from supervisors.
func (f *Fetcher) Recover(ctx context.Context, topologyID string, digest []byte) (Source, error) {
	sources, err := f.replicaSources(topologyID, digest)
	if err != nil && !errors.Is(err, ErrNoDistribution) { // a ghost StormBase has none
		return Source{}, err
	}
	if len(sources) > 0 {
		src, err := f.fetchFrom(ctx, topologyID, digest, sources)
		if !errors.Is(err, ErrNotHeld) {
			return src, err
		}
		// Every registered replica answered that it holds nothing: their
		// disks were wiped and they have not noticed yet. The supervisors
		// may still hold it.
	}
	if sources, err = SupervisorSources(f.Params.Session.Read(), topologyID, digest); err != nil {
		return Source{}, err
	}
	src, err := f.fetchFrom(ctx, topologyID, digest, sources)
	if errors.Is(err, ErrNotHeld) && src == (Source{}) { // a stalled download is not "held nowhere"
		return Source{}, fmt.Errorf("%w: %s with meta %s (asked %d supervisors)", ErrHeldNowhere, topologyID, Hex(digest), len(sources))
	}
	if err == nil {
		f.Params.Logger.Info("code recovered from a supervisor", "topology", topologyID, "from", src.String())
	}
	return src, err
}

// RecoverFromAny is Recover's last look before a topology is marked LOST:
// it asks every supervisor that serves a code port at once, not a sample,
// and fetches from one that holds the code. The error wraps
// ErrHeldNowhere only when every one answered that it does not.
func (f *Fetcher) RecoverFromAny(ctx context.Context, topologyID string, digest []byte) (Source, error) {
	sources, err := AllSupervisorSources(f.Params.Session.Read(), topologyID, digest)
	if err != nil {
		return Source{}, err
	}
	src, err := AskAll(ctx, f.Params.Peers.Transient, Code{Kind: f.Kind, TopologyID: topologyID, Digest: digest}, sources)
	if err != nil {
		return Source{}, err
	}
	if src, err = f.fetchFrom(ctx, topologyID, digest, []Source{src}); err == nil {
		f.Params.Logger.Info("code recovered from a supervisor", "topology", topologyID, "from", src.String())
	}
	return src, err
}

// otherVersion reports whether a blob's source answered with the meta of
// another version than digest: a blob's key keeps its name across
// versions, so that source does not hold this one (a topology's code never
// changes: another meta there is garbled).
func otherVersion(kind Kind, meta, digest []byte) bool {
	sum := sha256.Sum256(meta)
	return kind == KindBlob && !bytes.Equal(sum[:], digest)
}

// replicaSources are the nimbus replicas other than this node that hold
// digest, in random order.
func (f *Fetcher) replicaSources(topologyID string, digest []byte) ([]Source, error) {
	addrs, err := Sources(f.Params.Session, f.Kind, topologyID, digest, f.Params.Self)
	out := make([]Source, len(addrs))
	for i, a := range addrs {
		out[i] = Source{Addr: a}
	}
	return out, err
}

// fetchFrom gets the meta from the first of sources that has it, then the
// files through the backend, and installs them. The error wraps
// ErrNotHeld when no source had the meta (and src is zero), or when the
// backend found nobody to send the files (src names the meta's source).
func (f *Fetcher) fetchFrom(ctx context.Context, topologyID string, digest []byte, sources []Source) (Source, error) {
	src, meta, err := f.firstMeta(ctx, topologyID, digest, sources)
	if err != nil {
		return Source{}, err
	}
	code := Code{Kind: f.Kind, TopologyID: topologyID, Digest: digest}
	if code.Meta, err = DecodeMeta(meta.GetMeta(), digest); err != nil {
		return Source{}, err
	}
	if src.Supervisor != "" {
		code.Sources = []string{src.Addr} // not registered as a replica
	}
	tmp, err := f.Store.NewTemp()
	if err != nil {
		return Source{}, err
	}
	defer os.RemoveAll(tmp) // a no-op once installed
	start := time.Now()
	if err := f.Dist.Download(ctx, tmp, code); err != nil {
		return src, fmt.Errorf("codedistributor: download %s (meta from %s): %w", topologyID, src, err)
	}
	if _, err := f.Store.Install(tmp, topologyID, code.Meta); err != nil {
		return Source{}, err
	}
	var size int64
	for _, file := range code.Meta.GetFiles() {
		size += file.GetSize()
	}
	f.Params.Logger.Info("code fetched", "component", "codedistributor", "topology", topologyID, "bytes", size,
		"from", src.String(), "elapsed", time.Since(start).Round(time.Millisecond))
	return src, nil
}

// firstMeta asks each source in turn for the meta, checked against digest.
// A supervisor that does not hold the code is normal (it runs other
// topologies) and logged at DEBUG; a nimbus replica that does not is not,
// and is logged at WARN. The error wraps ErrNotHeld when every source
// answered that it holds nothing.
func (f *Fetcher) firstMeta(ctx context.Context, topologyID string, digest []byte, sources []Source) (Source, *nimbusv1.GetCodeMetaResponse, error) {
	log := f.Params.Logger
	lastErr := fmt.Errorf("%w: no source of %s with meta %s", ErrNotHeld, topologyID, Hex(digest))
	notHeld := 0
	for _, src := range sources {
		meta, err := f.meta(ctx, src.Addr, topologyID, digest)
		if err == nil {
			return src, meta, nil
		}
		if ctx.Err() != nil {
			return Source{}, nil, ctx.Err()
		}
		if status.Code(err) == codes.NotFound {
			notHeld++
			if src.Supervisor != "" {
				log.Debug("supervisor does not hold the code", "topology", topologyID, "source", src.String())
			} else {
				log.Warn("a registered replica does not hold the code; trying the next source", "topology", topologyID, "source", src.String())
			}
			continue
		}
		lastErr = err
		log.Warn("cannot get code meta; trying the next source", "topology", topologyID, "source", src.String(), "err", err)
	}
	if notHeld == len(sources) {
		return Source{}, nil, fmt.Errorf("%w: no source of %s with meta %s (%d asked)", ErrNotHeld, topologyID, Hex(digest), notHeld)
	}
	return Source{}, nil, fmt.Errorf("codedistributor: meta of %s from %d sources: %w", topologyID, len(sources), lastErr)
}

func (f *Fetcher) meta(ctx context.Context, addr, topologyID string, digest []byte) (*nimbusv1.GetCodeMetaResponse, error) {
	client, err := f.Params.Peers.Code(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	resp, err := client.GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: topologyID, Blob: f.Kind == KindBlob})
	if err != nil {
		return nil, err
	}
	if otherVersion(f.Kind, resp.GetMeta(), digest) {
		return nil, status.Errorf(codes.NotFound, "%s holds another version of blob %q", addr, topologyID)
	}
	if _, err := DecodeMeta(resp.GetMeta(), digest); err != nil {
		return nil, err
	}
	return resp, nil
}
