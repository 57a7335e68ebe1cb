package codesync

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

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

// Config wires a Syncer. The Gate's session, store and /storms cache are
// the Syncer's too.
type Config struct {
	Gate
	Fetcher  *codedistributor.Fetcher
	Replicas *cluster.ReplicaCache
	// Supervisors is the cache of /supervisors: a supervisor that joins
	// retries a recovery at once.
	Supervisors *cluster.DirCache[*clusterv1.SupervisorInfo]
	Self        *clusterv1.NimbusInfo
	Election    Election
	// SweepEvery is nimbus.code.sync.freq.secs: the safety sweep.
	SweepEvery time.Duration
	// CatchUpWait is how long a topology's code may be missing, and a
	// fetch find no replica, before it counts as stuck and is logged at
	// WARN (catchup.go): topology.max.replication.wait.time.sec.
	CatchUpWait time.Duration
	// LostGrace is nimbus.code.lost.grace.secs: how long code may be held
	// nowhere before it is marked LOST (lost.go); 0 never marks.
	LostGrace time.Duration
	Logger    *slog.Logger
}

// Syncer keeps the local store in step with the cluster. New starts
// nothing; Run does the work until its context ends.
type Syncer struct {
	cfg  Config
	log  *slog.Logger
	self string
	wake chan struct{}

	mu        sync.Mutex
	pinned    map[string]int
	recovered map[string]recovery // code this process got back from a supervisor
}

// recovery is where, and when, this nimbus recovered a topology's code.
type recovery struct {
	from   codedistributor.Source
	at     time.Time
	digest []byte
}

// New returns a Syncer.
func New(cfg Config) *Syncer {
	return &Syncer{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "codesync"),
		self:   cluster.HostPort(cfg.Self),
		wake:   make(chan struct{}, 1),
		pinned: map[string]int{}, recovered: map[string]recovery{},
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

func (s *Syncer) isPinned(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pinned[id] > 0
}

// task is a fetch under way, or a replica registration held, for one
// topology's code; cancel ends it.
type task struct {
	cancel context.CancelFunc
	digest []byte
}

// tasks are the fetches, or the registrations, by topology id.
type tasks map[string]*task

// stop ends the task of id, if there is one.
func (ts tasks) stop(id string) {
	if t, ok := ts[id]; ok {
		t.cancel()
		delete(ts, id)
	}
}

// stopUnless ends every task whose topology keep does not name.
func (ts tasks) stopUnless(keep map[string][]byte) {
	for id := range ts {
		if _, ok := keep[id]; !ok {
			ts.stop(id)
		}
	}
}

// run is one Run's state: what it fetches and which replicas it holds.
type run struct {
	*Syncer
	ctx        context.Context
	wg         *sync.WaitGroup
	fetching   tasks
	registered tasks
	fetched    chan *task // a fetch is done
	catchUp    *catchUp
}

// Run keeps the store in step until ctx ends. Each pass reads what the
// cluster wants and acts on it; a change of /storms, /code-distributor or
// the election, a copy reported corrupt, a fetch done, or the sweep starts
// the next.
//
// A pass costs what changed, not what the store holds: code this nimbus
// registered as a replica is trusted while its directory is there, and
// verified again, all of it, only on a full pass: the first, the sweep's,
// after a copy was reported corrupt, and after the election changed (a
// failed Eligible, which verifies everything, withdrew the nimbus).
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
	r := &run{Syncer: s, ctx: ctx, wg: &wg, fetching: tasks{}, registered: tasks{}, fetched: make(chan *task, 16),
		catchUp: newCatchUp(s.cfg.CatchUpWait)}
	for full := true; ; {
		// Taken before what they announce is read: no change goes unseen.
		// Not every replica list: another nimbus's replica changes
		// nothing here (the fetches follow them themselves).
		storms, dists := s.cfg.Storms.Changed(), s.cfg.Replicas.Distributions.Changed()
		election, reported := s.cfg.Election.Changed(), s.cfg.Store.Reported()
		var lost <-chan struct{} // a mark lifts or restores a block
		if s.cfg.Lost != nil {
			lost = s.cfg.Lost.Changed()
		}

		wanted := s.wanted()
		present, err := s.cfg.Store.IDs()
		if err != nil {
			s.log.Warn("cannot list local code", "err", err)
		}
		r.holdOrFetch(wanted, present, full)
		r.unmarkHeld()
		r.fetching.stopUnless(wanted)
		r.registered.stopUnless(wanted)
		s.removeUnwanted(wanted, present)
		stuckAt := r.gate(r.missing(s.cfg.Storms.Snapshot()))
		full = false

		var stuck <-chan time.Time // code missing until then is stuck: say so
		if !stuckAt.IsZero() {
			stuck = time.After(time.Until(stuckAt))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-storms:
		case <-dists:
		case <-election: // a failed Eligible withdrew it, say
			full = true
		case <-reported: // a copy found corrupt: verify it again
			full = true
		case <-lost:
		case <-s.wake:
		case <-sweep.C:
			full = true
		case <-stuck:
		case t := <-r.fetched:
			for id, cur := range r.fetching {
				if cur == t {
					r.fetching.stop(id)
				}
			}
		}
	}
}

// holdOrFetch registers this nimbus as a replica of every wanted topology
// whose code it holds, verified, and fetches the code of the others. Code
// it is a replica of is verified again only when full, or when its
// directory (present) is gone.
func (r *run) holdOrFetch(wanted map[string][]byte, present map[string]bool, full bool) {
	for id, digest := range wanted {
		if t, ok := r.registered[id]; ok && !bytes.Equal(t.digest, digest) {
			r.registered.stop(id) // same id, other code: start over
		}
		if t, ok := r.fetching[id]; ok && !bytes.Equal(t.digest, digest) {
			r.fetching.stop(id)
		}
		if _, held := r.registered[id]; held && present[id] && !full {
			continue
		}
		err := r.cfg.Store.Verify(id, digest)
		if err == nil {
			r.fetching.stop(id)
			if _, ok := r.registered[id]; !ok {
				r.registered[id] = r.register(id, digest)
			}
			continue
		}
		if _, ok := r.registered[id]; ok {
			r.log.Error("lost verified code; no longer a replica", "topology", id, "err", err)
			r.registered.stop(id)
		}
		if errors.Is(err, codedistributor.ErrCorrupt) {
			_ = r.cfg.Store.Remove(id)
		}
		if _, ok := r.fetching[id]; !ok && !r.isPinned(id) {
			r.fetching[id] = r.startFetch(id, digest)
		}
	}
}

// register keeps this nimbus's replica node for id while the task lives.
func (r *run) register(id string, digest []byte) *task {
	ctx, cancel := context.WithCancel(r.ctx)
	info := &clusterv1.ReplicaInfo{Host: r.cfg.Self.GetHost(), Port: r.cfg.Self.GetPort(), CodeMetaDigest: digest}
	if rec, ok := r.recoveredFrom(id, digest); ok {
		info.RecoveredFrom = rec.from.String() + ", by nimbus " + r.self
		info.RecoveredUnixMs = rec.at.UnixMilli()
	}
	path := r.cfg.Session.Paths().Replica(id, r.self)
	r.wg.Go(func() { cluster.KeepEphemeral(ctx, r.cfg.Session, path, cluster.Encode(info), r.log, nil) })
	r.log.Info("replica of topology", "topology", id, "digest", codedistributor.Hex(digest)[:16])
	return &task{cancel: cancel, digest: digest}
}

// startFetch fetches the code of id in the background; the task is sent
// on r.fetched once it is installed.
func (r *run) startFetch(id string, digest []byte) *task {
	ctx, cancel := context.WithCancel(r.ctx)
	t := &task{cancel: cancel, digest: digest}
	r.wg.Go(func() {
		if r.fetch(ctx, id, digest) == nil {
			select {
			case r.fetched <- t:
			case <-r.ctx.Done():
			}
		}
	})
	return t
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

// gate queues the election while every active topology is held, and
// withdraws it while the code of some is missing (sorted). Missing code is
// normal for a moment after a submission (INFO); once some has been
// missing for the wait, it warns, once per spell. It returns when code
// missing now will have been missing for the wait (zero if none will).
func (r *run) gate(missing []string) (stuckAt time.Time) {
	e := r.cfg.Election
	switch {
	case len(missing) == 0 && !e.Queued():
		r.log.Info("holding the code of every active topology; joining the leader queue")
		e.Queue()
	case len(missing) > 0 && e.Queued():
		r.log.Info("missing code of active topologies; leaving the leader queue until fetched",
			"missing", len(missing), "topologies", missing)
		e.Withdraw()
	}
	stuck, stuckAt := r.catchUp.observe(missing, time.Now())
	if r.catchUp.startsSpell(stuck) {
		r.log.Warn("code of active topologies still missing after topology.max.replication.wait.time.sec; out of the leader queue until fetched",
			"missing", len(stuck), "topologies", stuck, "wait", r.cfg.CatchUpWait)
	}
	return stuckAt
}

// missing lists the topologies of storms that need this nimbus's code
// (Gate.needs) and that it is not a replica of, sorted: what holdOrFetch
// has not verified.
func (r *run) missing(storms map[string]*clusterv1.StormBase) []string {
	var out []string
	for id := range r.cfg.needs(storms) {
		if t, ok := r.registered[id]; !ok || !bytes.Equal(t.digest, storms[id].GetCodeMetaDigest()) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// removeUnwanted deletes local code (present) the cluster no longer wants.
// The caches can lag a submission (its distribution created a moment ago),
// so each deletion is checked against pins and a fresh read of ZooKeeper.
func (s *Syncer) removeUnwanted(wanted map[string][]byte, present map[string]bool) {
	paths := s.cfg.Session.Paths()
	conn := s.cfg.Session.Conn()
	for id := range present {
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
		s.mu.Lock()
		delete(s.recovered, id)
		s.mu.Unlock()
		s.log.Info("removed code of a topology the cluster no longer has", "topology", id)
	}
}

// fetch retries until the code of id is installed or ctx ends: at once
// when a replica list or the supervisors change, otherwise with backoff.
func (s *Syncer) fetch(ctx context.Context, id string, digest []byte) error {
	backoff := minBackoff
	began := time.Now()
	nowhere := s.newHeldNowhere()
	for {
		// Taken first, so a replica registering during the attempt counts.
		replicasChanged, supervisorsChanged := s.cfg.Replicas.Changed(), s.supervisorsChanged()
		err := s.fetchOnce(ctx, id, digest)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if nowhere.observe(err, time.Now()) {
			s.markLost(id, digest, nowhere)
		}
		wait := nowhere.wait(backoff, time.Now())
		s.log.Log(ctx, fetchFailureLevel(err, time.Since(began), s.cfg.CatchUpWait),
			"cannot fetch code yet; retrying", "topology", id, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-replicasChanged:
		case <-supervisorsChanged:
		case <-time.After(wait):
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// fetchOnce makes one attempt. The code of a committed topology (in
// /storms) may be recovered from a supervisor when no nimbus holds it; a
// submission in flight is fetched from nimbuses only, since no supervisor
// can hold it yet.
func (s *Syncer) fetchOnce(ctx context.Context, id string, digest []byte) error {
	if s.cfg.Storms.Snapshot()[id] == nil {
		return s.cfg.Fetcher.Fetch(ctx, id, digest)
	}
	src, err := s.cfg.Fetcher.Recover(ctx, id, digest)
	if err == nil && src.Supervisor != "" {
		s.mu.Lock()
		s.recovered[id] = recovery{from: src, at: time.Now(), digest: digest}
		s.mu.Unlock()
	}
	return err
}

// recoveredFrom says whether this process recovered id's code, digest,
// from a supervisor, and where from.
func (s *Syncer) recoveredFrom(id string, digest []byte) (recovery, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recovered[id]
	return rec, ok && bytes.Equal(rec.digest, digest)
}

// supervisorsChanged is closed when the supervisors change (never without
// a cache).
func (s *Syncer) supervisorsChanged() <-chan struct{} {
	if s.cfg.Supervisors == nil {
		return nil
	}
	return s.cfg.Supervisors.Changed()
}
