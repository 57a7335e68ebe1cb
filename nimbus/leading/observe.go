package leading

import (
	"container/heap"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/codesync"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// What a round tells the term's Placer (schedule.go): only what changed
// since the round before, as the caches say (DirCache.Changes). A child the
// cache read again is told again even if it holds what it held (a read
// makes a new message): the Placer then keeps it as it was, at the cost of
// that one topology.

// toldTopology is what the Placer was last given about one topology.
type toldTopology struct {
	base    *clusterv1.StormBase  // as cached; nil: unreadable or LOST
	current *clusterv1.Assignment // its current assignment: as cached, as written, or nil
	garbage bool                  // the node holds garbage: rewrite it
}

// observeTopologies tells the Placer of every topology whose StormBase,
// LOST mark or current assignment changed since the last round, and
// forgets those that are gone: the caches say which changed (Changes), so
// a round costs what changed. A LOST topology's StormBase counts as
// unreadable: the leader has no code to schedule it with, so it keeps its
// assignment as it is.
func (sch *scheduler) observeTopologies(stormsDir cacheOf[*clusterv1.StormBase], assignmentsDir cacheOf[*clusterv1.Assignment],
	lostDir cacheOf[*clusterv1.LostMark]) {
	ids := changed(stormsDir, &sch.gens.storms, sch.told)
	for id := range changed(assignmentsDir, &sch.gens.assignments, sch.told) {
		ids[id] = true
	}
	for id := range changed(lostDir, &sch.gens.lost, sch.told) {
		ids[id] = true
	}
	for id := range sch.recheck {
		ids[id] = true
	}
	clear(sch.recheck)
	storms, cached, unreadable := stormsDir.Snapshot(), assignmentsDir.Snapshot(), assignmentsDir.Unreadable()
	lost := codesync.LostMarks(storms, lostDir.Snapshot())
	for id := range ids {
		base, ok := storms[id]
		if !ok {
			sch.forget(id)
			continue
		}
		if lost[id] != nil {
			base = nil
		}
		sch.observeTopology(id, base, cached[id], unreadable[id])
	}
}

// cacheOf is what a round reads of one of the view's caches (a
// cluster.DirCache): its children, those unreadable, and which changed.
type cacheOf[M proto.Message] interface {
	Snapshot() map[string]M
	Unreadable() map[string]bool
	Changes(since uint64) (map[string]bool, uint64, bool)
}

// changed returns the children of c that changed since *gen, and moves
// *gen on; when the cache cannot say, every child it lists and every one
// known from before (known).
func changed[M proto.Message, V any](c cacheOf[M], gen *uint64, known map[string]V) map[string]bool {
	names, now, ok := c.Changes(*gen)
	*gen = now
	if ok {
		if names == nil {
			names = map[string]bool{}
		}
		return names
	}
	all := make(map[string]bool, len(known))
	for id := range c.Snapshot() {
		all[id] = true
	}
	for id := range known {
		all[id] = true
	}
	return all
}

// observeTopology tells the Placer of topology id if what it knows of it
// changed: base (nil: unreadable or LOST), its cached assignment, whether
// that node holds garbage.
func (sch *scheduler) observeTopology(id string, base *clusterv1.StormBase, cached *clusterv1.Assignment, garbage bool) {
	now := toldTopology{base: base, current: sch.currentOf(id, cached), garbage: garbage}
	if told, ok := sch.told[id]; ok && told == now {
		return
	}
	if base == nil && now.current == nil {
		sch.forget(id) // never readable, never placed: nothing to hold
		return
	}
	sch.told[id] = now
	cur := fromProto(now.current)
	if base == nil {
		sch.placer.SetTopology(frozenTopology(id, cur), cur)
		return
	}
	numWorkers := int(base.GetNumWorkers())
	if n := workersOf(cur); frozen(base) && n > 0 {
		numWorkers = min(numWorkers, n) // a killed or rebalancing topology does not grow into free slots
	}
	sch.placer.SetTopology(assign.Topology{ID: id, NumWorkers: numWorkers,
		Executors: assign.Executors(base.GetComponentExecutors())}, cur)
}

// workersOf is how many distinct slots assignment a uses.
func workersOf(a assign.Assignment) int {
	slots := make(map[assign.Slot]bool, len(a))
	for _, s := range a {
		slots[s] = true
	}
	return len(slots)
}

// forget drops a topology the cluster no longer has, and what this term
// remembered of it.
func (sch *scheduler) forget(id string) {
	sch.placer.RemoveTopology(id)
	delete(sch.told, id)
	delete(sch.written, id)
	delete(sch.deleted, id)
	sch.setShort(id, 0)
}

// currentOf is topology id's current assignment: the cached one, unless
// this term wrote or deleted it since and the cache does not show that
// yet. A write the cache shows is forgotten, and the cached copy, equal to
// it, becomes the one told (a new pointer, nothing to decide again).
func (sch *scheduler) currentOf(id string, cached *clusterv1.Assignment) *clusterv1.Assignment {
	if a, ok := sch.written[id]; ok {
		if cached == nil || !proto.Equal(cached, a) {
			return a
		}
		delete(sch.written, id) // the cache caught up
		if told, ok := sch.told[id]; ok && told.current == a {
			told.current = cached
			sch.told[id] = told
		}
		return cached
	}
	if sch.deleted[id] {
		if cached != nil {
			return nil
		}
		delete(sch.deleted, id) // the cache caught up
	}
	return cached
}

// observeSupervisors tells the Placer which supervisors are live: those
// registered whose heartbeat this leader saw change within timeout, by its
// own clock (clocks are never compared across machines; a new term starts
// every supervisor with a full timeout). Only the supervisors the cache
// says changed are looked at (a heartbeat read changes them all); one
// that goes silent is found through a heap of when each would.
func (sch *scheduler) observeSupervisors(sups cacheOf[*clusterv1.SupervisorInfo], now time.Time, timeout time.Duration) {
	registered := sups.Snapshot()
	for id := range changed(sups, &sch.gens.supervisors, sch.sups) {
		info, ok := registered[id]
		switch {
		case !ok:
			sch.setLive(id, nil, false)
			delete(sch.sups, id)
			delete(sch.seen, id)
			delete(sch.hosts, id)
			continue
		case info == nil:
			sch.sups[id] = nil
			sch.setLive(id, nil, false) // never decoded
			continue
		}
		sch.sups[id] = info
		if prev, ok := sch.seen[id]; !ok || prev.beat != info.GetLastHeartbeatUnixMs() {
			sch.seen[id] = heartbeatSeen{beat: info.GetLastHeartbeatUnixMs(), at: now}
			heap.Push(&sch.silent, silence{at: now.Add(timeout), id: id})
		}
		sch.hosts[id] = info.GetHost()
		sch.setLive(id, info, now.Sub(sch.seen[id].at) <= timeout)
	}
	for len(sch.silent) > 0 && sch.silent[0].at.Before(now) {
		s := heap.Pop(&sch.silent).(silence)
		if seen, ok := sch.seen[s.id]; ok && now.Sub(seen.at) > timeout {
			sch.setLive(s.id, nil, false) // registered but silent: hung
		}
	}
}

// setLive adds or removes a supervisor from the Placer; a live one with
// ports that changed is set again.
func (sch *scheduler) setLive(id string, info *clusterv1.SupervisorInfo, live bool) {
	switch {
	case live:
		sch.placer.SetSupervisor(assign.Supervisor{ID: id, Ports: info.GetSlotPorts()})
		sch.live[id] = true
	case sch.live[id]:
		sch.placer.RemoveSupervisor(id)
		delete(sch.live, id)
	}
}

// silence is when a supervisor would go silent, unless it beats again.
type silence struct {
	at time.Time
	id string
}

// silenceHeap is a min-heap of silences by time (container/heap).
type silenceHeap []silence

func (h silenceHeap) Len() int           { return len(h) }
func (h silenceHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h silenceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *silenceHeap) Push(x any)        { *h = append(*h, x.(silence)) }
func (h *silenceHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
