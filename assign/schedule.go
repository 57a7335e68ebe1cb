package assign

import (
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
//     3b. Growth, as Storm reschedules a topology short of workers: a
//     topology whose executors all kept their slot, but on fewer workers
//     than min(NumWorkers, its executors), takes n more slots when n are
//     free (as many as it lacks, or as are free). Each kept worker keeps
//     its first executors (Executors order), at most executors/(workers+n)
//     of them; the others are placed as in rule 3, so the topology ends
//     evenly spread over its kept and new workers.
//  4. Topologies are processed in ID order, so earlier IDs get free slots
//     first; the result is deterministic for the same input.
//
// Apart from growth, kept executors never move: a topology keeps its
// number of workers (fewer than NumWorkers while no slot is free, more if
// NumWorkers was lowered since) until its entry in current is removed. A
// rebalance, which changes NumWorkers or the parallelism, therefore
// deletes the topology's current assignment before calling Schedule, so
// the topology is placed afresh.
//
// NumWorkers below 1 counts as 1. A topology ID listed twice is scheduled
// once, from its first entry; an executor listed twice is placed once; a
// supervisor listed twice has the union of its ports.
//
// Schedule does not modify its arguments, and the result shares no map with
// current. It does not block; its cost grows as n log n in the number of
// topologies, slots and executors.
func Schedule(topologies []Topology, supervisors []Supervisor, current map[string]Assignment) map[string]Assignment {
	p := NewPlacer()
	ports := map[string][]int32{}
	for _, s := range supervisors {
		ports[s.ID] = append(ports[s.ID], s.Ports...)
	}
	for id, ps := range ports {
		p.SetSupervisor(Supervisor{ID: id, Ports: ps})
	}
	ids := make(map[string]bool, len(topologies))
	for _, t := range topologies {
		if !ids[t.ID] {
			ids[t.ID] = true
			p.SetTopology(t, current[t.ID])
		}
	}
	p.Place()
	out := make(map[string]Assignment, len(ids))
	for id := range ids {
		t := p.tops[id]
		out[id] = t.result
		if t.kept {
			out[id] = maps.Clone(t.result) // shares no map with current
		}
	}
	return out
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

// worker is one slot of the topology being placed: its position among
// the topology's slots, and its executors.
type worker struct {
	slot  int32
	execs int32
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
