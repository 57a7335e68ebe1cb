package assign

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// The Placer decides what Schedule decides, however it got to its state:
// after every step of random changes (supervisors added, changed, removed;
// topologies submitted, changed, killed; current assignments written by
// someone else; results adopted or not), Place's results equal Schedule's
// on the same state, and every result that differs from the caller's
// current is among those Place says it decided.
func TestPlacerIsScheduleIncrementally(t *testing.T) {
	forCases(t, func(t *testing.T, r *rand.Rand) {
		p := NewPlacer()
		sups := map[string]Supervisor{}
		topos := map[string]Topology{}
		current := map[string]Assignment{} // what the caller holds as current
		for step := range 10 {
			added := randomSupervisors(r)
			for _, s := range added[:min(len(added), r.IntN(4))] {
				sups[s.ID] = s
				p.SetSupervisor(s)
			}
			for _, id := range slices.Sorted(maps.Keys(sups)) {
				if r.IntN(8) == 0 {
					delete(sups, id)
					p.RemoveSupervisor(id)
				}
			}
			submitted := randomTopologies(r)
			for _, tp := range submitted[:min(len(submitted), r.IntN(3))] {
				tp.ID = fmt.Sprintf("t%02d", r.IntN(12))
				topos[tp.ID] = tp
				p.SetTopology(tp, current[tp.ID])
			}
			for _, id := range slices.Sorted(maps.Keys(topos)) {
				switch r.IntN(12) {
				case 0: // killed
					delete(topos, id)
					delete(current, id)
					p.RemoveTopology(id)
				case 1: // its assignment rewritten by someone else, or deleted (a rebalance)
					current[id] = garble(r, map[string]Assignment{id: current[id]})[id]
					if r.IntN(2) == 0 {
						current[id] = nil
					}
					p.SetTopology(topos[id], current[id])
				}
			}

			decided := p.Place()
			want := Schedule(slices.Collect(maps.Values(topos)), slices.Collect(maps.Values(sups)), current)
			for id := range topos {
				got := p.Result(id)
				if !reflect.DeepEqual(got, want[id]) {
					t.Fatalf("step %d: %s placed at %v, Schedule says %v\nsupervisors %v\ntopologies %v\ncurrent %v",
						step, id, got, want[id], sups, topos, current)
				}
				if !maps.Equal(got, current[id]) && !slices.Contains(decided, id) {
					t.Fatalf("step %d: %s's result %v differs from its current %v but Place did not name it", step, id, got, current[id])
				}
			}
			if free := freeSlots(sups, want); p.FreeSlots() != free {
				t.Fatalf("step %d: FreeSlots = %d, want %d", step, p.FreeSlots(), free)
			}
			for _, id := range decided { // the caller writes most of what changed
				if res := p.Result(id); !maps.Equal(res, current[id]) && r.IntN(4) != 0 {
					p.Adopt(id)
					current[id] = maps.Clone(res)
				}
			}
		}
	})
}

// A change costs what it touches: placing one new topology among many
// keeps none of the others again.
func TestPlacerDecidesOnlyWhatChanged(t *testing.T) {
	p := NewPlacer()
	for _, s := range supervisors(100, 4) {
		p.SetSupervisor(s)
	}
	for i := range 200 {
		p.SetTopology(topology(fmt.Sprintf("t%03d", i), 2, 3), nil)
	}
	for _, id := range p.Place() {
		p.Adopt(id)
	}
	if decided := p.Place(); len(decided) != 0 {
		t.Fatalf("nothing changed, yet Place decided %v", decided)
	}
	p.SetTopology(topology("new", 2, 3), nil)
	if decided := p.Place(); !slices.Equal(decided, []string{"new"}) {
		t.Fatalf("one topology submitted: Place decided %v, want [new]", decided)
	}
	p.Adopt("new")
	p.RemoveSupervisor("s7") // hosts two workers of t007, say
	decided := p.Place()
	if len(decided) == 0 || len(decided) > 8 {
		t.Fatalf("a supervisor of 4 slots gone: Place decided %d topologies (%v), want those it hosted", len(decided), decided)
	}
}

// freeSlots counts the slots of sups that no assignment of result uses.
func freeSlots(sups map[string]Supervisor, result map[string]Assignment) int {
	used := map[Slot]bool{}
	for _, a := range result {
		for _, s := range a {
			used[s] = true
		}
	}
	free := 0
	for _, s := range sups {
		for _, port := range slices.Compact(slices.Sorted(slices.Values(s.Ports))) {
			if !used[Slot{s.ID, port}] {
				free++
			}
		}
	}
	return free
}
