package nimbus

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
)

// storeHeadroom is what an upload leaves free in the store's filesystem
// beyond its bundle: room for meta.pb and the directories' blocks, and for
// the filesystem's other writers (codesync's fetches, logs), so that
// accepting an upload never fills the disk to its last block. A store
// that failed is writable again only with this much free (probeStore).
const storeHeadroom = 4 << 20

// uploadGate admits the uploads of this nimbus's submissions (admitUpload).
type uploadGate struct {
	limit    atomic.Int64 // nimbus.max.concurrent.uploads, which a reload may change
	under    atomic.Int64 // uploads under way
	health   *storeHealth // whether the store can be written
	mu       sync.Mutex
	reserved int64 // declared artifact bytes of the uploads under way
}

func newUploadGate(maxUploads int, health *storeHealth) *uploadGate {
	g := &uploadGate{health: health}
	g.setLimit(maxUploads)
	return g
}

// setLimit changes nimbus.max.concurrent.uploads: uploads under way
// finish; new ones wait for the count to fall below the new limit.
func (g *uploadGate) setLimit(maxUploads int) { g.limit.Store(int64(maxUploads)) }

// take reserves an upload's place, or says false when limit uploads are
// under way already.
func (g *uploadGate) take() (limit int64, ok bool) {
	limit = g.limit.Load()
	if g.under.Add(1) > limit {
		g.under.Add(-1)
		return limit, false
	}
	return limit, true
}

func (g *uploadGate) release() { g.under.Add(-1) }

// admitUpload lets an upload of declared content bytes (0: not declared;
// a topology's artifact or a blob, checked against its maximum by the
// caller) and a spec.pb of specBytes in, or says why not, before any chunk
// is read: the store failed and no probe has passed since (its error), too
// many uploads are under way (nimbus.max.concurrent.uploads:
// RESOURCE_EXHAUSTED), the store's filesystem has less than storeHeadroom
// free (the store fails, as if a write had: RESOURCE_EXHAUSTED), or it
// lacks room for this upload and storeHeadroom, counting the declared
// bytes of the uploads under way as used (RESOURCE_EXHAUSTED; the store is
// fine). done frees the slot and the reserved room.
func (s *service) admitUpload(declared, specBytes int64) (done func(), err error) {
	g := s.uploads
	if _, err := g.health.state(); err != nil {
		return nil, notStored(fmt.Errorf("the code store failed a write and has not passed a probe since: %w", err))
	}
	if limit, ok := g.take(); !ok {
		return nil, fmt.Errorf("%w: %d submissions are uploading to this nimbus already (%s); nothing was stored, try again later",
			apierr.ErrResourceExhausted, limit, configs.KeyNimbusMaxUploads)
	}
	free, err := s.store.Free()
	if err == nil {
		err = lowOnSpace(s.store, free)
	}
	switch {
	case isStoreFailure(err): // full or read-only: every upload would fail
		g.release()
		return nil, s.storeFailed(err)
	case err != nil:
		g.release()
		return nil, fmt.Errorf("%w: %v; nothing was stored", apierr.ErrCodeStoreUnavailable, err)
	}
	need := declared + specBytes + storeHeadroom
	g.mu.Lock()
	defer g.mu.Unlock()
	if free-g.reserved < need {
		g.release()
		return nil, fmt.Errorf("%w: the code store %s has %d bytes free, %d of them promised to uploads under way; "+
			"this one needs %d (%d of content, %d of spec, %d kept free); nothing was stored",
			apierr.ErrResourceExhausted, s.store.Root(), free, g.reserved, need, declared, specBytes, storeHeadroom)
	}
	g.reserved += declared
	return func() {
		g.mu.Lock()
		g.reserved -= declared
		g.mu.Unlock()
		g.release()
	}, nil
}

// storeFailed classifies a failed write to the store
// (codedistributor.Store.WriteError). A full or read-only filesystem marks
// the store failed (health NOT_SERVING until a probe passes) and answers
// as notStored says; any other error is returned as it is.
func (s *service) storeFailed(err error) error {
	err = s.store.WriteError(err)
	if !isStoreFailure(err) {
		return err
	}
	return notStored(s.uploads.health.failed(err, s.log))
}

// isStoreFailure reports whether err, classified by
// codedistributor.Store.WriteError, is a full or read-only store.
func isStoreFailure(err error) bool {
	return errors.Is(err, codedistributor.ErrStoreFull) || errors.Is(err, codedistributor.ErrStoreReadOnly)
}

// notStored is the answer to a store that cannot be written (err, as
// isStoreFailure sees it): a full one is RESOURCE_EXHAUSTED, a read-only
// one UNAVAILABLE; either way nothing was stored.
func notStored(err error) error {
	if errors.Is(err, codedistributor.ErrStoreFull) {
		return fmt.Errorf("%w: %v; nothing was stored", apierr.ErrResourceExhausted, err)
	}
	return fmt.Errorf("%w: %v; nothing was stored", apierr.ErrCodeStoreUnavailable, err)
}
