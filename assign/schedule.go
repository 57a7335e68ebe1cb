package assign

import (
	"cmp"
	"maps"
	"slices"
)

// Schedule returns the new assignment of every topology in topologies,
// given the live supervisors and the current assignments (topologies not in
// the list are dropped from the result; their slots are free).
//
// The rules, like Storm's EvenScheduler:
//
//  1. A slot is alive if its supervisor is in supervisors and lists that
//     port. Current entries whose slot is dead, or whose executor no longer
//     belongs to the topology, are dropped. A slot never hosts two
//     topologies: slots used by a kept entry are not free for others, and if
//     current puts two topologies on one slot, the first in ID order keeps
//     it and the other's entries there are dropped.
//  2. Stability: if nothing is dropped from a topology's current entries
//     and they cover all its executors, it is returned unchanged (nothing
//     moves when nothing changed). Executors on alive kept slots never
//     move; only executors without a slot (new, or from dead slots) are
//     placed.
//  3. Placement of a topology that has executors without a slot: its slots
//     are its kept slots (the first NumWorkers of them in slot order) plus
//     free slots until it has NumWorkers slots, every executor has a slot,
//     or no slot is free. Free slots are chosen one by one to spread the
//     topology's workers across supervisors: on the supervisor hosting
//     fewest of its workers, then with most free slots, then lowest
//     supervisor ID, lowest port. Executors without a slot then go one by
//     one, in the topology's Executors order, to its slot with the fewest
//     executors, ties to the first in slot order (kept slots by supervisor
//     ID and port, then free slots in the order taken), so executors are
//     spread evenly across its workers. If no slot is available at all, the
//     topology gets an empty assignment, and Schedule places it at a later
//     call when slots are free.
//  4. Topologies are processed in ID order, so earlier IDs get free slots
//     first; the result is deterministic for the same input.
//
// Because kept executors never move, a topology keeps its number of
// workers (fewer than NumWorkers if slots were scarce when it was placed,
// more if NumWorkers was lowered since) until its entry in current is
// removed. A rebalance, which changes
// NumWorkers or the parallelism, therefore deletes the topology's current
// assignment before calling Schedule, so the topology is placed afresh.
//
// NumWorkers below 1 counts as 1. A topology ID listed twice is scheduled
// once, from its first entry; an executor listed twice is placed once; a
// supervisor listed twice has the union of its ports.
//
// Schedule does not modify its arguments, and the result shares no map with
// current. It does not block; its cost grows as n log n in the number of
// topologies, slots and executors.
func Schedule(topologies []Topology, supervisors []Supervisor, current map[string]Assignment) map[string]Assignment {
	order := make([]int, len(topologies))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(topologies[a].ID, topologies[b].ID)
	})
	order = slices.CompactFunc(order, func(a, b int) bool {
		return topologies[a].ID == topologies[b].ID
	})

	x := newSlots(supervisors)
	out := make(map[string]Assignment, len(order))
	var pending []int32
	for k, ti := range order {
		t := &topologies[ti]
		cur := current[t.ID]
		if keep(x, int32(k), t.Executors, cur) {
			if cur == nil {
				cur = Assignment{}
			}
			out[t.ID] = maps.Clone(cur)
			continue
		}
		pending = append(pending, int32(k))
	}

	x.startPlacing()
	for _, k := range pending {
		t := &topologies[order[k]]
		out[t.ID] = place(x, k, t, current[t.ID])
	}
	return out
}

// keep claims for topology k the alive slots of its current entries and
// reports whether the topology is unchanged: nothing dropped, every
// executor covered.
func keep(x *slots, k int32, execs []Executor, cur Assignment) bool {
	var cache slotCache
	kept := 0
	dropped := false
	for _, e := range execs {
		s, ok := cur[e]
		if !ok {
			continue
		}
		if i := cache.lookup(x, s); i >= 0 && x.claim(i, k) {
			kept++
		} else {
			dropped = true
		}
	}
	// With distinct executors, kept == len(cur) means no entry is stale.
	return !dropped && kept == len(execs) && kept == len(cur) &&
		(sortedByTask(execs) || dedupe(execs) == nil)
}

// sortedByTask reports whether execs are in increasing order of first task,
// which makes them distinct.
func sortedByTask(execs []Executor) bool {
	for i := 1; i < len(execs); i++ {
		if execs[i].TaskStart <= execs[i-1].TaskStart {
			return false
		}
	}
	return true
}

// dedupe returns execs without duplicates, or nil if it has none.
func dedupe(execs []Executor) []Executor {
	seen := make(map[Executor]struct{}, len(execs))
	var out []Executor
	for i, e := range execs {
		if _, dup := seen[e]; dup {
			if out == nil {
				out = slices.Clip(execs[:i:i])
			}
			continue
		}
		seen[e] = struct{}{}
		if out != nil {
			out = append(out, e)
		}
	}
	return out
}

// worker is one slot of the topology being placed.
type worker struct {
	slot  int32
	execs int32
}

// place builds the assignment of topology k: its kept entries (claimed by
// keep) plus a slot for every other executor, as far as slots allow.
func place(x *slots, k int32, t *Topology, cur Assignment) Assignment {
	execs := t.Executors
	if !sortedByTask(execs) {
		if d := dedupe(execs); d != nil {
			execs = d
		}
	}
	res := make(Assignment, len(execs))
	var cache slotCache
	keptSlots, unplaced := x.keptSlots[:0], x.unplaced[:0]
	for _, e := range execs {
		if s, ok := cur[e]; ok {
			if i := cache.lookup(x, s); i >= 0 && x.owner[i] == k {
				res[e] = s
				keptSlots = append(keptSlots, i)
				continue
			}
		}
		unplaced = append(unplaced, e)
	}
	x.keptSlots, x.unplaced = keptSlots, unplaced
	if len(unplaced) > 0 {
		spread(x, k, max(t.NumWorkers, 1), res, keptSlots, unplaced)
	}
	return res
}

// spread adds to res, the kept entries of topology k on keptSlots, the
// unplaced executors, on at most numWorkers slots.
func spread(x *slots, k int32, numWorkers int, res Assignment, keptSlots []int32, unplaced []Executor) {
	defer x.done()

	// Kept workers in slot order, with their executor counts.
	slices.Sort(keptSlots)
	workers := x.workers[:0]
	for _, i := range keptSlots {
		if n := len(workers); n > 0 && workers[n-1].slot == i {
			workers[n-1].execs++
			continue
		}
		workers = append(workers, worker{slot: i, execs: 1})
		x.host(x.sup[i])
	}
	workers = workers[:min(len(workers), numWorkers)]
	for need := min(numWorkers-len(workers), len(unplaced)); need > 0; need-- {
		i := x.take(k)
		if i < 0 {
			break
		}
		workers = append(workers, worker{slot: i})
	}
	x.workers = workers
	if len(workers) == 0 {
		return
	}

	// A min-heap of workers by (executors, slot order).
	h := x.heap[:0]
	for i := range workers {
		h = append(h, int32(i))
	}
	x.heap = h
	less := func(a, b int32) bool {
		wa, wb := workers[a], workers[b]
		return wa.execs < wb.execs || wa.execs == wb.execs && a < b
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
	for _, e := range unplaced {
		w := &workers[h[0]]
		res[e] = x.slots[w.slot]
		w.execs++
		siftDown(h, 0, less)
	}
}

func siftDown(h []int32, i int, less func(a, b int32) bool) {
	for {
		m := i
		if l := 2*i + 1; l < len(h) && less(h[l], h[m]) {
			m = l
		}
		if r := 2*i + 2; r < len(h) && less(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
