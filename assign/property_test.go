package assign

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("assign.seed", 0, "seed of the first random case (0: from the clock)")
	casesFlag = flag.Int("assign.cases", 400, "random cases per property test")
)

// forCases runs f on random cases, each with its own seed, and names the
// seed of a failing case so that -assign.seed=N -assign.cases=1 replays it.
func forCases(t *testing.T, f func(t *testing.T, r *rand.Rand)) {
	base := *seedFlag
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	for i := range *casesFlag {
		seed := base + uint64(i)
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			f(t, rand.New(rand.NewPCG(seed, seed)))
		})
		if !ok {
			t.Fatalf("failed with seed %d; replay with -assign.seed=%d -assign.cases=1", seed, seed)
		}
	}
}

// randomSupervisors returns up to 10 supervisors with up to 5 ports each,
// possibly repeated, in random order.
func randomSupervisors(r *rand.Rand) []Supervisor {
	sups := make([]Supervisor, r.IntN(11))
	for i := range sups {
		sups[i].ID = fmt.Sprintf("s%d", r.IntN(12))
		for range r.IntN(6) {
			sups[i].Ports = append(sups[i].Ports, int32(6700+r.IntN(6)))
		}
	}
	return sups
}

// randomTopologies returns up to 10 topologies of up to 4 components.
func randomTopologies(r *rand.Rand) []Topology {
	topos := make([]Topology, r.IntN(11))
	for i := range topos {
		par := map[string]int32{}
		for range r.IntN(5) {
			par[fmt.Sprintf("c%d", r.IntN(6))] = int32(r.IntN(7))
		}
		execs := Executors(par)
		if len(execs) > 0 && r.IntN(5) == 0 {
			// Not what Executors returns; Schedule copes all the same.
			r.Shuffle(len(execs), func(i, j int) { execs[i], execs[j] = execs[j], execs[i] })
			if r.IntN(2) == 0 {
				execs = append(execs, execs[r.IntN(len(execs))])
			}
		}
		topos[i] = Topology{ID: fmt.Sprintf("t%02d", i), NumWorkers: r.IntN(7), Executors: execs}
	}
	r.Shuffle(len(topos), func(i, j int) { topos[i], topos[j] = topos[j], topos[i] })
	return topos
}

// changeTopologies returns topos with random parallelism and worker changes,
// kills and submissions.
func changeTopologies(r *rand.Rand, topos []Topology) []Topology {
	out := slices.Clone(topos)
	for i := range out {
		if r.IntN(4) == 0 {
			out[i].Executors = Executors(map[string]int32{"c0": int32(r.IntN(8)), "c9": int32(r.IntN(3))})
		}
		if r.IntN(4) == 0 {
			out[i].NumWorkers = r.IntN(7)
		}
	}
	if len(out) > 0 && r.IntN(3) == 0 {
		i := r.IntN(len(out))
		out = slices.Delete(out, i, i+1)
	}
	added := randomTopologies(r)
	for _, tp := range added[:min(len(added), r.IntN(3))] {
		tp.ID = fmt.Sprintf("n%02d", r.IntN(5))
		out = append(out, tp)
	}
	return out
}

// garble returns a copy of cur with random entries removed, moved to random
// (often dead or shared) slots, or added for executors of other topologies.
func garble(r *rand.Rand, cur map[string]Assignment) map[string]Assignment {
	out := map[string]Assignment{}
	for _, id := range slices.Sorted(maps.Keys(cur)) {
		a := Assignment{}
		for _, e := range slices.SortedFunc(maps.Keys(cur[id]), compareExecutors) {
			switch r.IntN(10) {
			case 0:
			case 1:
				a[e] = Slot{fmt.Sprintf("s%d", r.IntN(12)), int32(6700 + r.IntN(6))}
			case 2:
				a[Executor{"stale", 99, 99}] = cur[id][e]
				a[e] = cur[id][e]
			default:
				a[e] = cur[id][e]
			}
		}
		out[id] = a
	}
	return out
}

func compareExecutors(a, b Executor) int {
	return cmp.Or(cmp.Compare(a.TaskStart, b.TaskStart), cmp.Compare(a.Component, b.Component), cmp.Compare(a.TaskEnd, b.TaskEnd))
}

// randomState returns topologies, supervisors and a current assignment of
// the kind the leader passes: the result of an earlier call, made with other
// supervisors and topologies, sometimes garbled.
func randomState(r *rand.Rand) ([]Topology, []Supervisor, map[string]Assignment) {
	topos := randomTopologies(r)
	sups := randomSupervisors(r)
	cur := Schedule(topos, sups, nil)
	if r.IntN(2) == 0 {
		cur = garble(r, cur)
	}
	return changeTopologies(r, topos), randomSupervisors(r), cur
}

// TestScheduleMatchesReference compares Schedule with a direct, slow
// rendering of its documented rules.
func TestScheduleMatchesReference(t *testing.T) {
	forCases(t, func(t *testing.T, r *rand.Rand) {
		topos, sups, cur := randomState(r)
		got := Schedule(topos, sups, cur)
		check(t, topos, sups, got)
		if want := reference(topos, sups, cur); !reflect.DeepEqual(got, want) {
			t.Fatalf("Schedule(%v, %v, %v)\n= %v\nreference %v", topos, sups, cur, got, want)
		}
	})
}

func TestPropertyFromEmpty(t *testing.T) {
	forCases(t, func(t *testing.T, r *rand.Rand) {
		topos, sups := randomTopologies(r), randomSupervisors(r)
		got := Schedule(topos, sups, nil)
		check(t, topos, sups, got)
		for _, tp := range topos {
			if !spreadOK(got[tp.ID]) {
				t.Errorf("%s: uneven executors %v", tp.ID, workers(got[tp.ID]))
			}
			if n := len(workers(got[tp.ID])); n > max(tp.NumWorkers, 1) {
				t.Errorf("%s: %d workers, NumWorkers %d", tp.ID, n, tp.NumWorkers)
			}
		}
	})
}

func TestPropertyIdempotent(t *testing.T) {
	forCases(t, func(t *testing.T, r *rand.Rand) {
		topos, sups, cur := randomState(r)
		once := Schedule(topos, sups, cur)
		if twice := Schedule(topos, sups, once); !reflect.DeepEqual(once, twice) {
			t.Fatalf("not idempotent:\n%v\n%v", once, twice)
		}
	})
}

func TestPropertySupervisorRemoved(t *testing.T) {
	forCases(t, func(t *testing.T, r *rand.Rand) {
		topos, sups, cur := randomState(r)
		before := Schedule(topos, sups, cur)
		if len(sups) == 0 {
			return
		}
		dead := sups[r.IntN(len(sups))].ID
		var alive []Supervisor
		for _, s := range sups {
			if s.ID != dead {
				alive = append(alive, s)
			}
		}
		after := Schedule(topos, alive, before)
		check(t, topos, alive, after)
		for id, a := range before {
			for e, s := range a {
				if s.SupervisorID != dead && after[id][e] != s {
					t.Errorf("%s %v moved from %v to %v", id, e, s, after[id][e])
				}
			}
		}
	})
}

func TestPropertyDeterministic(t *testing.T) {
	forCases(t, func(t *testing.T, r *rand.Rand) {
		topos, sups, cur := randomState(r)
		want := Schedule(topos, sups, cur)
		r.Shuffle(len(sups), func(i, j int) { sups[i], sups[j] = sups[j], sups[i] })
		// Shuffle topologies, keeping the first entry of a repeated ID first.
		slices.SortStableFunc(topos, func(a, b Topology) int { return cmp.Compare(a.ID, b.ID) })
		if got := Schedule(topos, sups, cur); !reflect.DeepEqual(got, want) {
			t.Fatalf("reordered input: %v, want %v", got, want)
		}
	})
}

// reference is Schedule's documented rules written directly, scanning all
// slots for every choice.
func reference(topologies []Topology, supervisors []Supervisor, current map[string]Assignment) map[string]Assignment {
	alive := map[Slot]bool{}
	for _, s := range supervisors {
		for _, p := range s.Ports {
			alive[Slot{s.ID, p}] = true
		}
	}
	allSlots := slices.SortedFunc(maps.Keys(alive), compareSlots)

	var topos []Topology
	seen := map[string]bool{}
	for _, tp := range topologies {
		if !seen[tp.ID] {
			seen[tp.ID] = true
			topos = append(topos, tp)
		}
	}
	slices.SortFunc(topos, func(a, b Topology) int { return cmp.Compare(a.ID, b.ID) })

	owner := map[Slot]string{}
	kept := map[string]Assignment{}
	execs := map[string][]Executor{}
	for _, tp := range topos {
		in := map[Executor]bool{}
		for _, e := range tp.Executors {
			if !in[e] {
				in[e] = true
				execs[tp.ID] = append(execs[tp.ID], e)
			}
		}
		kept[tp.ID] = Assignment{}
		for _, e := range execs[tp.ID] {
			s, ok := current[tp.ID][e]
			if o, used := owner[s]; ok && alive[s] && (!used || o == tp.ID) {
				owner[s] = tp.ID
				kept[tp.ID][e] = s
			}
		}
	}

	out := map[string]Assignment{}
	for _, tp := range topos {
		res := kept[tp.ID]
		out[tp.ID] = res
		var unplaced []Executor
		for _, e := range execs[tp.ID] {
			if _, ok := res[e]; !ok {
				unplaced = append(unplaced, e)
			}
		}
		referencePlace(res, unplaced, max(tp.NumWorkers, 1), allSlots, owner, tp.ID)
	}
	for _, tp := range topos { // rule 3b, once every topology has had rule 3
		res := out[tp.ID]
		if len(res) < len(execs[tp.ID]) {
			continue
		}
		moved := referenceGrowth(res, execs[tp.ID], max(tp.NumWorkers, 1), allSlots, owner)
		referencePlace(res, moved, max(tp.NumWorkers, 1), allSlots, owner, tp.ID)
	}
	return out
}

// referencePlace is rule 3: it places unplaced, the executors of topology
// id that res lacks.
func referencePlace(res Assignment, unplaced []Executor, nw int, allSlots []Slot, owner map[Slot]string, id string) {
	if len(unplaced) == 0 {
		return
	}
	hosts := map[string]int{}
	keptSlots := slices.SortedFunc(maps.Keys(workers(res)), compareSlots)
	for _, s := range keptSlots {
		hosts[s.SupervisorID]++
	}
	slots := keptSlots[:min(len(keptSlots), nw)]
	for taken := 0; len(slots) < nw && taken < len(unplaced); taken++ {
		free := map[string]int{}
		for _, s := range allSlots {
			if _, used := owner[s]; !used {
				free[s.SupervisorID]++
			}
		}
		var best *Slot
		for _, s := range allSlots {
			if _, used := owner[s]; used {
				continue
			}
			if best == nil || cmp.Or(
				cmp.Compare(hosts[s.SupervisorID], hosts[best.SupervisorID]),
				-cmp.Compare(free[s.SupervisorID], free[best.SupervisorID]),
				compareSlots(s, *best)) < 0 {
				best = &s
			}
		}
		if best == nil {
			break
		}
		owner[*best] = id
		hosts[best.SupervisorID]++
		slots = append(slots, *best)
	}
	counts := make([]int, len(slots))
	for i, s := range slots {
		counts[i] = workers(res)[s]
	}
	for _, e := range unplaced {
		if len(slots) == 0 {
			break
		}
		i := slices.Index(counts, slices.Min(counts))
		res[e] = slots[i]
		counts[i]++
	}
}

// referenceGrowth is rule 3b: it takes from res, all of whose executors
// kept their slot, the executors that make room for the workers the
// topology lacks while slots are free, and returns them.
func referenceGrowth(res Assignment, execs []Executor, numWorkers int, allSlots []Slot, owner map[Slot]string) []Executor {
	free := 0
	for _, s := range allSlots {
		if _, used := owner[s]; !used {
			free++
		}
	}
	have := len(workers(res))
	n := min(min(numWorkers, len(execs))-have, free)
	if n <= 0 {
		return nil
	}
	limit := len(execs) / (have + n)
	onSlot := map[Slot]int{}
	var moved []Executor
	for _, e := range execs {
		s := res[e]
		if onSlot[s] < limit {
			onSlot[s]++
			continue
		}
		delete(res, e)
		moved = append(moved, e)
	}
	return moved
}
