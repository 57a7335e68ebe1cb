package codesync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Fetch retries back off from minBackoff to maxBackoff; a replica joining
// the list retries at once.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// Election is the part of leader.Election that code gates.
type Election interface {
	Queue()
	Withdraw()
	Queued() bool
	Changed() <-chan struct{}
}

// Config wires a Syncer.
type Config struct {
	Session  *cluster.Session
	Store    *codedistributor.Store
	Fetcher  *codedistributor.Fetcher
	Storms   *cluster.DirCache[*clusterv1.StormBase]
	Replicas *cluster.ReplicaCache
	Self     *clusterv1.NimbusInfo
	Election Election
	// SweepEvery is nimbus.code.sync.freq.secs: the safety sweep.
	SweepEvery time.Duration
	Logger     *slog.Logger
}

// Syncer keeps the local store in step with the cluster. New starts
// nothing; Run does the work until its context ends.
type Syncer struct {
	cfg  Config
	log  *slog.Logger
	self string
	wake chan struct{}

	mu      sync.Mutex
	pinned  map[string]int
	invalid map[string]bool
}

// New returns a Syncer.
func New(cfg Config) *Syncer {
	return &Syncer{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "codesync"),
		self:    cluster.HostPort(cfg.Self),
		wake:    make(chan struct{}, 1),
		pinned:  map[string]int{},
		invalid: map[string]bool{},
	}
}

func (s *Syncer) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Pin keeps the local code of id, which no distribution asks for yet (a
// submission in progress), until the returned func is called.
func (s *Syncer) Pin(id string) (unpin func()) {
	s.mu.Lock()
	s.pinned[id]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.pinned[id]--; s.pinned[id] <= 0 {
			delete(s.pinned, id)
		}
		s.mu.Unlock()
		s.nudge()
	}
}

// Invalidate reports that the local copy of id is corrupt (found while
// serving it): this nimbus stops being a replica of it at once, deletes it
// and fetches it again.
func (s *Syncer) Invalidate(id string) {
	s.mu.Lock()
	s.invalid[id] = true
	s.mu.Unlock()
	s.nudge()
}

// Eligible checks, against a fresh read of /storms (a cache may lag the
// write that a lock hand-over follows), that this nimbus holds the code of
// every topology that needs it, verified. It is the election's gate.
func (s *Syncer) Eligible() error {
	defer s.nudge() // a failure below withdraws the election: re-check soon
	conn := s.cfg.Session.Conn()
	paths := s.cfg.Session.Paths()
	ids, _, err := conn.Children(paths.Storms())
	if errors.Is(err, zk.ErrNoNode) {
		ids, err = nil, nil // deleted by hand (the whole root, say): no topologies
	}
	if err != nil {
		return fmt.Errorf("codesync: cannot list %s: %w", paths.Storms(), err)
	}
	cached := s.cfg.Storms.Snapshot() // a nil payload: read, never decoded
	storms := make(map[string]*clusterv1.StormBase, len(ids))
	for _, id := range ids {
		base, known := cached[id]
		if !known {
			data, _, err := conn.Get(paths.Storm(id))
			if errors.Is(err, zk.ErrNoNode) {
				continue // removed since the listing
			}
			if err != nil {
				// Not knowing what it needs is not holding it.
				return fmt.Errorf("codesync: cannot read %s: %w", paths.Storm(id), err)
			}
			base = new(clusterv1.StormBase)
			if cluster.Decode(paths.Storm(id), data, base) != nil {
				base = nil
			}
		}
		storms[id] = base
	}
	if missing := s.missing(storms); len(missing) > 0 {
		return fmt.Errorf("codesync: no verified code for %d active topologies: %v", len(missing), missing)
	}
	return nil
}

// missing lists the topologies of storms whose code this nimbus lacks,
// sorted. A leader needs the code of every topology except those being
// killed (it only removes them). A StormBase that never decoded (garbage
// or an empty node, logged by the cache) names no code to hold and nothing
// a leader could schedule: it is skipped, or one junk node would take
// every nimbus out of the leader queue. A corrupt copy is reported to the
// loop, which deletes and fetches it again.
func (s *Syncer) missing(storms map[string]*clusterv1.StormBase) []string {
	var missing []string
	for id, base := range storms {
		if base == nil || base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
			continue
		}
		if err := s.cfg.Store.Verify(id, base.GetCodeMetaDigest()); err != nil {
			if errors.Is(err, codedistributor.ErrCorrupt) {
				s.Invalidate(id)
			}
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	return missing
}

type task struct {
	cancel context.CancelFunc
	digest []byte
}

// Run keeps the store in step until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	for _, c := range []<-chan struct{}{s.cfg.Storms.Loaded(), s.cfg.Replicas.Distributions.Loaded()} {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sweep := time.NewTicker(s.cfg.SweepEvery)
	defer sweep.Stop()
	fetched := make(chan *task, 16)
	fetching := map[string]*task{}
	registered := map[string]*task{}
	stop := func(tasks map[string]*task, id string) {
		if t, ok := tasks[id]; ok {
			t.cancel()
			delete(tasks, id)
		}
	}

	for {
		stormsChanged, replicasChanged := s.cfg.Storms.Changed(), s.cfg.Replicas.Changed()
		electionChanged := s.cfg.Election.Changed()
		wanted := s.wanted()

		s.mu.Lock()
		invalid := s.invalid
		s.invalid = map[string]bool{}
		s.mu.Unlock()
		for id := range invalid {
			s.log.Error("local code corrupt; no longer a replica, fetching it again", "topology", id)
			stop(registered, id)
			_ = s.cfg.Store.Remove(id)
		}

		for id, digest := range wanted {
			if t, ok := registered[id]; ok && !bytes.Equal(t.digest, digest) {
				stop(registered, id) // same id, other code: start over
			}
			if t, ok := fetching[id]; ok && !bytes.Equal(t.digest, digest) {
				stop(fetching, id)
			}
			err := s.cfg.Store.Verify(id, digest)
			if err == nil {
				stop(fetching, id)
				if _, ok := registered[id]; !ok {
					registered[id] = s.register(ctx, &wg, id, digest)
				}
				continue
			}
			if _, ok := registered[id]; ok {
				s.log.Error("lost verified code; no longer a replica", "topology", id, "err", err)
				stop(registered, id)
			}
			if errors.Is(err, codedistributor.ErrCorrupt) {
				_ = s.cfg.Store.Remove(id)
			}
			if _, ok := fetching[id]; !ok && !s.isPinned(id) {
				fctx, cancel := context.WithCancel(ctx)
				t := &task{cancel: cancel, digest: digest}
				fetching[id] = t
				wg.Go(func() {
					if s.fetch(fctx, id, digest) == nil {
						select {
						case fetched <- t:
						case <-ctx.Done():
						}
					}
				})
			}
		}
		for id := range registered {
			if _, ok := wanted[id]; !ok {
				stop(registered, id)
			}
		}
		for id := range fetching {
			if _, ok := wanted[id]; !ok {
				stop(fetching, id)
			}
		}
		s.removeUnwanted(wanted)
		s.gate(len(s.missing(s.cfg.Storms.Snapshot())))

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stormsChanged:
		case <-replicasChanged:
		case <-electionChanged: // a failed Eligible withdrew it, say
		case <-s.wake:
		case <-sweep.C:
		case t := <-fetched:
			for id, cur := range fetching {
				if cur == t {
					stop(fetching, id)
				}
			}
		}
	}
}

func (s *Syncer) isPinned(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pinned[id] > 0
}

// wanted returns the digest of every topology the cluster wants held: a
// distribution asks for it, or it is in /storms.
func (s *Syncer) wanted() map[string][]byte {
	wanted := map[string][]byte{}
	for id, d := range s.cfg.Replicas.Distributions.Snapshot() {
		if d != nil {
			wanted[id] = d.GetCodeMetaDigest()
		}
	}
	for id, base := range s.cfg.Storms.Snapshot() {
		if _, ok := wanted[id]; !ok && base != nil {
			wanted[id] = base.GetCodeMetaDigest()
		}
	}
	return wanted
}

// gate queues the election while every active topology is held.
func (s *Syncer) gate(missing int) {
	e := s.cfg.Election
	switch {
	case missing == 0 && !e.Queued():
		s.log.Info("holding the code of every active topology; joining the leader queue")
		e.Queue()
	case missing > 0 && e.Queued():
		s.log.Warn("missing code of active topologies; leaving the leader queue until fetched", "missing", missing)
		e.Withdraw()
	}
}

// removeUnwanted deletes local code the cluster no longer wants. The
// caches can lag a submission (its distribution created a moment ago), so
// each deletion is checked against pins and a fresh read of ZooKeeper.
func (s *Syncer) removeUnwanted(wanted map[string][]byte) {
	ids, err := s.cfg.Store.IDs()
	if err != nil {
		s.log.Warn("cannot list local code", "err", err)
		return
	}
	paths := s.cfg.Session.Paths()
	conn := s.cfg.Session.Conn()
	for _, id := range ids {
		if _, ok := wanted[id]; ok || s.isPinned(id) {
			continue
		}
		if ok, _, err := conn.Exists(paths.Distribution(id)); err != nil || ok {
			continue
		}
		if ok, _, err := conn.Exists(paths.Storm(id)); err != nil || ok {
			continue
		}
		if s.isPinned(id) { // pinned while we looked
			continue
		}
		if err := s.cfg.Store.Remove(id); err != nil {
			s.log.Warn("cannot remove code", "topology", id, "err", err)
			continue
		}
		s.log.Info("removed code of a topology the cluster no longer has", "topology", id)
	}
}

// register keeps this nimbus's replica node for id while the task lives.
func (s *Syncer) register(ctx context.Context, wg *sync.WaitGroup, id string, digest []byte) *task {
	rctx, cancel := context.WithCancel(ctx)
	info := &clusterv1.ReplicaInfo{Host: s.cfg.Self.GetHost(), Port: s.cfg.Self.GetPort(), CodeMetaDigest: digest}
	path := s.cfg.Session.Paths().Replica(id, s.self)
	wg.Go(func() {
		cluster.KeepEphemeral(rctx, s.cfg.Session, path, cluster.Encode(info), s.log, nil)
	})
	s.log.Info("replica of topology", "topology", id, "digest", codedistributor.Hex(digest)[:16])
	return &task{cancel: cancel, digest: digest}
}

// fetch retries until the code of id is installed or ctx ends: at once
// when a replica list changes, otherwise with backoff.
func (s *Syncer) fetch(ctx context.Context, id string, digest []byte) error {
	backoff := minBackoff
	for {
		// Taken first, so a replica registering during the attempt counts.
		replicasChanged := s.cfg.Replicas.Changed()
		err := s.cfg.Fetcher.Fetch(ctx, id, digest)
		if err == nil {
			s.nudge()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("cannot fetch code yet; retrying", "topology", id, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-replicasChanged:
		case <-time.After(backoff):
			backoff = min(2*backoff, maxBackoff)
		}
	}
}
