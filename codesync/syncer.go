package codesync

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
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
	touched   map[string]bool     // to look at in the next pass: unpinned since
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
		pinned: map[string]int{}, touched: map[string]bool{}, recovered: map[string]recovery{},
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
		s.touched[id] = true
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

// run is one Run's state: what it fetches and which replicas it holds,
// and what the cluster wants as of the cache states it last looked at.
type run struct {
	*Syncer
	ctx        context.Context
	wg         *sync.WaitGroup
	fetching   tasks
	registered tasks
	fetched    chan *task // a fetch is done
	catchUp    *catchUp
	wanted     map[string][]byte // the digest of every topology the cluster wants held
	missing    map[string]bool   // what a leader needs that this nimbus is not a replica of
	gens       struct{ storms, dists, lost uint64 }
	tampers    uint64 // the store's Tampers as of the last full pass
	inOutage   bool   // the cluster's state was gone at the last pass (outage)
	// goneSince is when each topology with code here was first seen with
	// neither StormBase nor distribution (removeUnwanted).
	goneSince map[string]time.Time
}

// tamperLookEvery is how often an idle Syncer passes anyway, so that a
// store wiped behind its back (Store.Tampers, a stat) is fetched again
// within a second, not at the sweep: a cluster whose every nimbus lost its
// code must not wait minutes to have a nimbus able to lead. A pass with
// nothing changed costs that stat and little else.
const tamperLookEvery = time.Second

// Run keeps the store in step until ctx ends. Each pass reads what the
// cluster wants and acts on it; a change of /storms, /code-distributor or
// the election, a copy reported corrupt, a fetch done, the sweep or the
// look for a wiped store (every tamperLookEvery) starts the next.
//
// A pass costs what changed, not what the cluster or the store holds: it
// looks only at the topologies the caches say changed (DirCache.Changes),
// those whose fetch ended and those unpinned, and trusts the code it is a
// replica of. A full pass looks at every topology and verifies every
// copy: the first, the sweep's, one after a copy was reported corrupt,
// after the election changed (a failed Eligible, which verifies
// everything, withdrew the nimbus), and after something other than the
// store changed its directory (a disk wiped behind its back).
func (s *Syncer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loaded := []<-chan struct{}{s.cfg.Storms.Loaded(), s.cfg.Replicas.Distributions.Loaded()}
	if s.cfg.Memory != nil {
		loaded = append(loaded, s.cfg.Versions.Loaded())
	}
	for _, c := range loaded {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sweep := time.NewTicker(s.cfg.SweepEvery)
	defer sweep.Stop()
	look := time.NewTicker(tamperLookEvery)
	defer look.Stop()
	r := &run{Syncer: s, ctx: ctx, wg: &wg, fetching: tasks{}, registered: tasks{}, fetched: make(chan *task, 16),
		catchUp: newCatchUp(s.cfg.CatchUpWait), wanted: map[string][]byte{}, missing: map[string]bool{}, goneSince: map[string]time.Time{}}
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
		var versions <-chan struct{} // the cluster's identity gone or back
		if s.cfg.Memory != nil {
			versions = s.cfg.Versions.Changed()
		}

		stuckAt := r.pass(full) // or when a removal's grace ends
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
		case <-versions:
			full = true
		case <-s.wake:
		case <-sweep.C:
			full = true
		case <-look.C: // the pass's stat of the store sees a wipe
		case <-stuck:
		case t := <-r.fetched:
			for id, cur := range r.fetching {
				if cur == t {
					r.fetching.stop(id)
					r.touch(id)
				}
			}
		}
	}
}

// pass brings the topologies that changed (all of them, when full) in
// step, and returns when the next pass is due by the clock: when code
// missing now will have been missing for the catch-up wait, or when a
// removal's grace ends (zero if neither).
func (r *run) pass(full bool) time.Time {
	if r.outage() {
		return time.Time{}
	}
	ids, complete := r.changedSince()
	tampers, err := r.cfg.Store.Tampers()
	if full || !complete || err != nil || tampers != r.tampers {
		full, ids, r.tampers = true, r.everything(), tampers
	}
	r.want(ids)
	r.holdOrFetch(ids, full)
	r.unmarkHeld()
	for id := range ids {
		if _, ok := r.wanted[id]; !ok {
			r.fetching.stop(id)
			r.registered.stop(id)
		}
	}
	removeDue := r.removeUnwanted(ids)
	r.updateMissing(ids)
	stuckAt := r.gate(slices.Sorted(maps.Keys(r.missing)))
	if stuckAt.IsZero() || (!removeDue.IsZero() && removeDue.Before(stuckAt)) {
		return removeDue
	}
	return stuckAt
}

// outage reports whether the cluster's state is gone from ZooKeeper
// (Gate.Identity): then nothing is removed or queued, and this nimbus
// leaves the leader queue, until the state comes back.
func (r *run) outage() bool {
	err := r.cfg.Identity()
	switch {
	case err == nil && r.inOutage:
		r.log.Warn("the cluster's state is back in ZooKeeper; syncing again")
		r.inOutage = false
	case err != nil && !r.inOutage:
		r.log.Error("not leading, not removing code: "+err.Error(), "queued", r.cfg.Election.Queued())
		r.inOutage = true
	}
	if err != nil && r.cfg.Election.Queued() {
		r.cfg.Election.Withdraw()
	}
	if err != nil {
		clear(r.goneSince) // graces start again once the state is back
	}
	return err != nil
}

// touch has the next pass look at id.
func (s *Syncer) touch(id string) {
	s.mu.Lock()
	s.touched[id] = true
	s.mu.Unlock()
}

// changedSince returns the topologies whose StormBase, distribution or
// LOST mark changed since the last pass, and those touched; false when a
// cache cannot say (look at everything).
func (r *run) changedSince() (map[string]bool, bool) {
	ids := map[string]bool{}
	complete := true
	look := func(names map[string]bool, gen uint64, ok bool) uint64 {
		complete = complete && ok
		for id := range names {
			ids[id] = true
		}
		return gen
	}
	r.gens.storms = look(r.cfg.Storms.Changes(r.gens.storms))
	r.gens.dists = look(r.cfg.Replicas.Distributions.Changes(r.gens.dists))
	if r.cfg.Lost != nil {
		r.gens.lost = look(r.cfg.Lost.Changes(r.gens.lost))
	}
	r.mu.Lock()
	for id := range r.touched {
		ids[id] = true
	}
	clear(r.touched)
	r.mu.Unlock()
	return ids, complete
}

// everything is every topology a pass could have to act on: in the
// caches, wanted, held, fetched, missing, or in the store.
func (r *run) everything() map[string]bool {
	ids := map[string]bool{}
	for id := range r.cfg.Storms.Snapshot() {
		ids[id] = true
	}
	for id := range r.cfg.Replicas.Distributions.Snapshot() {
		ids[id] = true
	}
	for _, known := range []map[string]bool{keys(r.wanted), keys(r.registered), keys(r.fetching), r.missing} {
		for id := range known {
			ids[id] = true
		}
	}
	present, err := r.cfg.Store.IDs()
	if err != nil {
		r.log.Warn("cannot list local code", "err", err)
	}
	for id := range present {
		ids[id] = true
	}
	return ids
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// want updates what the cluster wants held of ids: the digest its
// distribution asks for, or its StormBase's when it has no distribution.
func (r *run) want(ids map[string]bool) {
	dists, storms := r.cfg.Replicas.Distributions.Snapshot(), r.cfg.Storms.Snapshot()
	for id := range ids {
		switch d, base := dists[id], storms[id]; {
		case d != nil:
			r.wanted[id] = d.GetCodeMetaDigest()
		case base != nil:
			r.wanted[id] = base.GetCodeMetaDigest()
		default:
			delete(r.wanted, id)
		}
	}
}

// updateMissing updates, for ids, what a leader needs (needed) that this
// nimbus is not a replica of with the StormBase's digest: what holdOrFetch
// has not verified.
func (r *run) updateMissing(ids map[string]bool) {
	storms := r.cfg.Storms.Snapshot()
	var marks map[string]*clusterv1.LostMark
	if r.cfg.Lost != nil {
		marks = r.cfg.Lost.Snapshot()
	}
	lost := LostMarks(storms, marks)
	for id := range ids {
		base := storms[id]
		t, held := r.registered[id]
		if needed(base, lost[id]) && (!held || !bytes.Equal(t.digest, base.GetCodeMetaDigest())) {
			r.missing[id] = true
		} else {
			delete(r.missing, id)
		}
	}
}

// holdOrFetch registers this nimbus as a replica of every wanted topology
// of ids whose code it holds, verified, and fetches the code of the
// others. Code it is a replica of is verified again only when full.
func (r *run) holdOrFetch(ids map[string]bool, full bool) {
	for id := range ids {
		digest, wanted := r.wanted[id]
		if !wanted {
			continue
		}
		if t, ok := r.registered[id]; ok && !bytes.Equal(t.digest, digest) {
			r.registered.stop(id) // same id, other code: start over
		}
		if t, ok := r.fetching[id]; ok && !bytes.Equal(t.digest, digest) {
			r.fetching.stop(id)
		}
		if _, held := r.registered[id]; held && !full {
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

// removeGrace is how long a topology must be gone (no StormBase, no
// distribution) before its code here is deleted. Deleting the root
// (deleteall) removes /storms and /code-distributor before, perhaps, the
// node that names the cluster: by the grace's end the outage shows
// (outage) and nothing is deleted.
const removeGrace = 2 * time.Second

// removeUnwanted deletes the local code of ids the cluster no longer
// wants, once gone for removeGrace; it returns when the next grace ends
// (zero if none runs), for a pass then. The caches can lag a submission
// (its distribution created a moment ago), so each deletion is checked
// against pins and a fresh read of ZooKeeper.
func (r *run) removeUnwanted(ids map[string]bool) (due time.Time) {
	s := r.Syncer
	read := s.cfg.Session.Read()
	look := maps.Clone(ids)
	for id := range r.goneSince {
		look[id] = true // again, every topology in its grace
	}
	now := time.Now()
	for id := range look {
		if _, ok := r.wanted[id]; ok || s.isPinned(id) || !s.cfg.Store.Has(id) {
			delete(r.goneSince, id)
			continue
		}
		if ok, err := read.HasDistribution(id); err != nil || ok {
			delete(r.goneSince, id)
			continue
		}
		if ok, err := read.HasStorm(id); err != nil || ok {
			delete(r.goneSince, id)
			continue
		}
		since, seen := r.goneSince[id]
		if !seen {
			since = now
			r.goneSince[id] = now
		}
		if end := since.Add(removeGrace); now.Before(end) {
			if due.IsZero() || end.Before(due) {
				due = end
			}
			continue
		}
		if s.isPinned(id) { // pinned while we looked
			continue
		}
		if err := s.cfg.Store.Remove(id); err != nil {
			s.log.Warn("cannot remove code", "topology", id, "err", err)
			continue
		}
		delete(r.goneSince, id)
		s.mu.Lock()
		delete(s.recovered, id)
		s.mu.Unlock()
		s.log.Info("removed code of a topology the cluster no longer has", "topology", id)
	}
	return due
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
			// The last look: every supervisor, not a sample. A copy
			// anywhere is recovered, never marked LOST.
			src, err := s.cfg.Fetcher.RecoverFromAny(ctx, id, digest)
			switch {
			case err == nil:
				s.recordRecovery(id, digest, src)
				return nil
			case errors.Is(err, codedistributor.ErrHeldNowhere):
				s.markLost(id, digest, nowhere)
			default:
				nowhere.observe(err, time.Now()) // one did not answer: it may hold it
			}
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
	if err == nil {
		s.recordRecovery(id, digest, src)
	}
	return err
}

// recordRecovery remembers that the code of id came from src, if src is
// a supervisor, for the replica node to say so.
func (s *Syncer) recordRecovery(id string, digest []byte, src codedistributor.Source) {
	if src.Supervisor == "" {
		return
	}
	s.mu.Lock()
	s.recovered[id] = recovery{from: src, at: time.Now(), digest: digest}
	s.mu.Unlock()
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
