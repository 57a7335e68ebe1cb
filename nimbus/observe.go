package nimbus

import (
	"container/heap"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// What a round tells the term's Placer (schedule.go): only what changed
// since the round before. The caches publish new payloads as new pointers,
// so a topology or supervisor whose pointer is the one last told about
// did not change, and costs a comparison.

// toldTopology is what the Placer was last given about one topology.
type toldTopology struct {
	base    *clusterv1.StormBase  // as cached; nil: unreadable or LOST
	current *clusterv1.Assignment // its current assignment: as cached, as written, or nil
	garbage bool                  // the node holds garbage: rewrite it
}

// observeTopologies tells the Placer of every topology whose StormBase,
// LOST mark or current assignment changed, and forgets those that are
// gone. A LOST topology's StormBase counts as unreadable: the leader has
// no code to schedule it with, so it keeps its assignment as it is.
func (sch *scheduler) observeTopologies(storms map[string]*clusterv1.StormBase, lost map[string]*clusterv1.LostMark,
	cached map[string]*clusterv1.Assignment, unreadable map[string]bool) {
	for id := range sch.told {
		if _, ok := storms[id]; !ok {
			sch.forget(id)
		}
	}
	for id, base := range storms {
		if lost[id] != nil {
			base = nil
		}
		now := toldTopology{base: base, current: sch.currentOf(id, cached[id]), garbage: unreadable[id]}
		if told, ok := sch.told[id]; ok && told == now {
			continue
		}
		if base == nil && now.current == nil {
			sch.forget(id) // never readable, never placed: nothing to hold
			continue
		}
		sch.told[id] = now
		cur := fromProto(now.current)
		if base == nil {
			sch.placer.SetTopology(frozenTopology(id, cur), cur)
			continue
		}
		sch.placer.SetTopology(assign.Topology{ID: id, NumWorkers: int(base.GetNumWorkers()),
			Executors: assign.Executors(base.GetComponentExecutors())}, cur)
	}
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
// every supervisor with a full timeout). A supervisor whose payload is
// the one last read did not change; one that goes silent is found through
// a heap of when each would, without looking at the others.
func (sch *scheduler) observeSupervisors(registered map[string]*clusterv1.SupervisorInfo, now time.Time, timeout time.Duration) {
	for id := range sch.sups {
		if _, ok := registered[id]; !ok {
			sch.setLive(id, nil, false)
			delete(sch.sups, id)
			delete(sch.seen, id)
			delete(sch.hosts, id)
		}
	}
	for id, info := range registered {
		if prev, ok := sch.sups[id]; ok && prev == info {
			continue
		}
		sch.sups[id] = info
		if info == nil {
			sch.setLive(id, nil, false) // never decoded
			continue
		}
		if prev, ok := sch.seen[id]; !ok || prev.beat != info.GetLastHeartbeatUnixMs() {
			sch.seen[id] = heartbeatSeen{beat: info.GetLastHeartbeatUnixMs(), at: now}
			heap.Push(&sch.silent, silence{at: now.Add(timeout), id: id})
		}
		sch.hosts[id] = info.GetHost()
		sch.setLive(id, info, now.Sub(sch.seen[id].at) <= timeout)
	}
	for len(sch.silent) > 0 && !sch.silent[0].at.After(now) {
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
