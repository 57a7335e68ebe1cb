package blobstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/notify"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Backoff of a fetch that failed: a replica may register any moment (the
// fetch retries at once when one does), so start short.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
	// stuckAfter is when a fetch that keeps failing is logged at WARN: a
	// new version is normally fetched within a transfer's time.
	stuckAfter = time.Minute
)

// SyncerConfig is what a nimbus's Syncer works with.
type SyncerConfig struct {
	Session *cluster.Session
	// Blobs is /blobstore, kept current by its owner (the nimbus).
	Blobs *cluster.BlobCache
	// Store is the nimbus's blob store, and Fetcher fetches into it
	// (codedistributor.KindBlob).
	Store   *codedistributor.Store
	Fetcher *codedistributor.Fetcher
	// Self is this nimbus's CodeService address (host:port), under which
	// it registers as a replica.
	Self string
	// SweepEvery is how often every copy is verified again
	// (nimbus.code.sync.freq.secs).
	SweepEvery time.Duration
	Logger     *slog.Logger
}

// Syncer keeps, on one nimbus, the current version of every blob in its
// blob store, verified, and the nimbus registered as its replica under
// /blobstore/<key> with that version's digest. It fetches from the other
// nimbuses, and from supervisors when no nimbus holds the version (a
// recovery). Blobs never gate leadership: a blob held nowhere is LOST
// (BlobInfo.state) and blocks nothing.
type Syncer struct {
	cfg SyncerConfig
	log *slog.Logger

	mu    sync.Mutex
	held  map[string][]byte // key -> the digest registered
	moved notify.Notifier   // a registration changed or a fetch ended
}

// NewSyncer returns a Syncer; it starts nothing.
func NewSyncer(cfg SyncerConfig) *Syncer {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Syncer{cfg: cfg, log: cfg.Logger.With("component", "blobsync"), held: map[string][]byte{}}
}

// Holds reports whether this nimbus holds, verified and registered, the
// version of key with digest.
func (s *Syncer) Holds(key string, digest []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Equal(s.held[key], digest)
}

// Await blocks until this nimbus holds the version of key with digest, or
// ctx ends (its error). A leader that took over before fetching a blob
// answers a read once it has it.
func (s *Syncer) Await(ctx context.Context, key string, digest []byte) error {
	for {
		moved := s.moved.Changed()
		if s.Holds(key, digest) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}

// Run keeps the blob store in step with /blobstore until ctx ends. It
// waits for the cache to load, then makes a pass at every change of
// /blobstore, of the store (an install, a copy reported corrupt), at the
// end of a fetch, and a full pass (every copy verified again) at each
// sweep.
func (s *Syncer) Run(ctx context.Context) error {
	select {
	case <-s.cfg.Blobs.Distributions.Loaded():
	case <-ctx.Done():
		return ctx.Err()
	}
	r := &syncRun{s: s, regs: map[string]*keep{}, fetches: map[string]*keep{}}
	defer r.stopAll()
	sweep := time.NewTicker(s.cfg.SweepEvery)
	defer sweep.Stop()
	look := time.NewTicker(tamperLookEvery)
	defer look.Stop()
	tampers, _ := s.cfg.Store.Tampers()
	full := true
	for {
		blobsChanged, stored, reported, moved := s.cfg.Blobs.Distributions.Changed(), s.cfg.Store.Changed(), s.cfg.Store.Reported(), s.moved.Changed()
		r.pass(ctx, full)
		full = false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-blobsChanged:
		case <-stored:
		case <-moved:
		case <-reported:
			full = true
		case <-sweep.C:
			full = true
		case <-look.C:
			// A store wiped behind the Syncer's back: a stat a second
			// finds it, as codesync's does for code.
			if n, err := s.cfg.Store.Tampers(); err == nil && n != tampers {
				tampers, full = n, true
			}
		}
	}
}

// tamperLookEvery is how often the Syncer looks whether something other
// than the store changed its directory.
const tamperLookEvery = time.Second

// keep is a goroutine the run owns for one key: a registration or a
// fetch of one digest.
type keep struct {
	digest []byte
	cancel context.CancelFunc
	done   chan struct{}
}

func (k *keep) stop() {
	k.cancel()
	<-k.done
}

// syncRun is one Run's state: the registrations and fetches it owns.
type syncRun struct {
	s       *Syncer
	regs    map[string]*keep
	fetches map[string]*keep
}

// pass looks at every blob: hold the current version (verified), register
// it, or fetch it; then drops what is no longer wanted. A pass that is not
// full trusts a registration of the current digest.
func (r *syncRun) pass(ctx context.Context, full bool) {
	s := r.s
	want := s.cfg.Blobs.Distributions.Snapshot()
	for key, m := range want {
		if m == nil {
			continue // undecodable: logged by the cache, acted on by no one
		}
		digest := m.GetCodeMetaDigest()
		if reg := r.regs[key]; reg != nil && bytes.Equal(reg.digest, digest) && !full && s.cfg.Store.Has(key) {
			continue
		}
		err := s.cfg.Store.Verify(key, digest)
		if err == nil {
			r.stopFetch(key)
			r.register(ctx, key, digest)
			continue
		}
		if errors.Is(err, codedistributor.ErrCorrupt) {
			s.log.Warn("blob copy corrupt; fetching it again", "key", key, "err", err)
			r.unregister(key)
			_ = s.cfg.Store.Remove(key)
		} else if reg := r.regs[key]; reg != nil && s.cfg.Store.Verify(key, reg.digest) != nil {
			r.unregister(key) // the version it registered is gone from the store
		}
		r.startFetch(ctx, key, digest)
	}
	r.removeUnwanted(want, full)
}

// removeUnwanted stops the registrations and fetches of blobs gone from
// /blobstore and deletes their copies; a full pass also deletes copies
// the run never knew (a blob deleted while this nimbus was down).
func (r *syncRun) removeUnwanted(want map[string]*clusterv1.BlobMeta, full bool) {
	for key := range r.regs {
		if _, ok := want[key]; !ok {
			r.unregister(key)
			r.remove(key)
		}
	}
	for key := range r.fetches {
		if _, ok := want[key]; !ok {
			r.stopFetch(key)
			r.remove(key)
		}
	}
	if !full {
		return
	}
	ids, err := r.s.cfg.Store.IDs()
	if err != nil {
		r.s.log.Warn("cannot list the blob store", "err", err)
		return
	}
	for key := range ids {
		if _, ok := want[key]; ok {
			continue
		}
		// The cache may not show a blob the leader committed and
		// installed a moment ago: only ZooKeeper says it is gone.
		if _, _, err := r.s.cfg.Session.Read().Blob(key); errors.Is(err, cluster.ErrNoNode) {
			r.remove(key)
		}
	}
}

func (r *syncRun) remove(key string) {
	if err := r.s.cfg.Store.Remove(key); err != nil {
		r.s.log.Warn("cannot remove a deleted blob's copy", "key", key, "err", err)
		return
	}
	r.s.log.Info("blob removed", "key", key)
}

// register keeps this nimbus's replica node of key with digest, replacing
// a registration of another version.
func (r *syncRun) register(ctx context.Context, key string, digest []byte) {
	s := r.s
	if reg := r.regs[key]; reg != nil {
		if bytes.Equal(reg.digest, digest) {
			return
		}
		r.unregister(key)
	}
	host, portText, _ := net.SplitHostPort(s.cfg.Self)
	port, _ := strconv.Atoi(portText)
	data := cluster.Encode(&clusterv1.ReplicaInfo{Host: host, Port: int32(port), CodeMetaDigest: digest})
	kctx, cancel := context.WithCancel(ctx)
	k := &keep{digest: digest, cancel: cancel, done: make(chan struct{})}
	r.regs[key] = k
	go func() {
		defer close(k.done)
		cluster.KeepEphemeral(kctx, s.cfg.Session, s.cfg.Session.Paths().BlobReplica(key, s.cfg.Self), data, s.log, nil)
	}()
	s.mu.Lock()
	s.held[key] = digest
	s.mu.Unlock()
	s.moved.Notify()
	s.log.Info("holding blob", "key", key, "digest", codedistributor.Hex(digest))
}

func (r *syncRun) unregister(key string) {
	reg := r.regs[key]
	if reg == nil {
		return
	}
	reg.stop()
	delete(r.regs, key)
	r.s.mu.Lock()
	delete(r.s.held, key)
	r.s.mu.Unlock()
	r.s.moved.Notify()
}

// startFetch fetches the version of key with digest unless a fetch of it
// runs already; a fetch of another version is replaced.
func (r *syncRun) startFetch(ctx context.Context, key string, digest []byte) {
	if f := r.fetches[key]; f != nil {
		select {
		case <-f.done:
		default:
			if bytes.Equal(f.digest, digest) {
				return
			}
		}
		r.stopFetch(key)
	}
	fctx, cancel := context.WithCancel(ctx)
	f := &keep{digest: digest, cancel: cancel, done: make(chan struct{})}
	r.fetches[key] = f
	go func() {
		defer close(f.done)
		defer r.s.moved.Notify() // the next pass installs what it got
		r.s.fetch(fctx, key, digest)
	}()
}

func (r *syncRun) stopFetch(key string) {
	if f := r.fetches[key]; f != nil {
		f.stop()
		delete(r.fetches, key)
	}
}

func (r *syncRun) stopAll() {
	for key := range r.fetches {
		r.stopFetch(key)
	}
	for key := range r.regs {
		r.unregister(key)
	}
}

// fetch gets one version until it succeeds or ctx ends: from the nimbuses
// that hold it, else from the supervisors (Fetcher.Recover), retrying at
// once when a replica registers, otherwise with backoff.
func (s *Syncer) fetch(ctx context.Context, key string, digest []byte) {
	backoff := minBackoff
	began := time.Now()
	for {
		replicasChanged := s.cfg.Blobs.Changed()
		src, err := s.cfg.Fetcher.Recover(ctx, key, digest)
		if err == nil {
			s.log.Info("blob fetched", "key", key, "digest", codedistributor.Hex(digest), "from", src.String())
			return
		}
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelInfo
		if time.Since(began) > stuckAfter && !errors.Is(err, codedistributor.ErrNotHeld) || time.Since(began) > 5*stuckAfter {
			level = slog.LevelWarn
		}
		s.log.Log(ctx, level, "cannot fetch blob yet; retrying", "key", key, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-replicasChanged:
		case <-time.After(backoff):
			backoff = min(2*backoff, maxBackoff)
		}
	}
}
