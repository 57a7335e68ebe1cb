package assign

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// supervisors returns n supervisors s0, s1, ... with ports 6700, 6701, ...
func supervisors(n, ports int) []Supervisor {
	sups := make([]Supervisor, n)
	for i := range sups {
		sups[i].ID = fmt.Sprintf("s%d", i)
		for p := range ports {
			sups[i].Ports = append(sups[i].Ports, int32(6700+p))
		}
	}
	return sups
}

// topology returns a topology with one component of n executors.
func topology(id string, workers int, n int32) Topology {
	return Topology{ID: id, NumWorkers: workers, Executors: Executors(map[string]int32{"c": n})}
}

// check fails t unless result satisfies the invariants that hold for every
// input: one assignment per topology, each holding only that topology's
// executors on alive slots, no slot shared by two topologies, and either
// every executor placed or none because no slot was left.
func check(t *testing.T, topos []Topology, sups []Supervisor, result map[string]Assignment) {
	t.Helper()
	alive := map[Slot]bool{}
	for _, s := range sups {
		for _, p := range s.Ports {
			alive[Slot{s.ID, p}] = true
		}
	}
	ids := map[string]bool{}
	for _, tp := range topos {
		ids[tp.ID] = true
	}
	if len(result) != len(ids) {
		t.Errorf("result has %d topologies, want %d", len(result), len(ids))
	}
	owner := map[Slot]string{}
	for id, a := range result {
		if !ids[id] {
			t.Errorf("result has unknown topology %q", id)
		}
		if a == nil {
			t.Errorf("topology %q: nil assignment", id)
		}
		for e, s := range a {
			if !alive[s] {
				t.Errorf("topology %q: executor %v on dead slot %v", id, e, s)
			}
			if o, ok := owner[s]; ok && o != id {
				t.Errorf("slot %v used by %q and %q", s, o, id)
			}
			owner[s] = id
		}
	}
	checked := map[string]bool{}
	for _, tp := range topos {
		if checked[tp.ID] {
			continue // a repeated ID is scheduled from its first entry
		}
		checked[tp.ID] = true
		a := result[tp.ID]
		want := map[Executor]bool{}
		for _, e := range tp.Executors {
			want[e] = true
		}
		for e := range a {
			if !want[e] {
				t.Errorf("topology %q: executor %v does not belong to it", tp.ID, e)
			}
		}
		if len(a) == len(want) {
			continue
		}
		if len(a) != 0 {
			t.Errorf("topology %q: %d of %d executors assigned", tp.ID, len(a), len(want))
		} else if len(owner) != len(alive) {
			t.Errorf("topology %q unassigned while %d of %d slots are free", tp.ID, len(alive)-len(owner), len(alive))
		}
	}
}

// workers returns the number of executors on each slot of a.
func workers(a Assignment) map[Slot]int {
	w := map[Slot]int{}
	for _, s := range a {
		w[s]++
	}
	return w
}

// spreadOK reports whether a's executor counts per slot differ by at most one.
func spreadOK(a Assignment) bool {
	w := workers(a)
	if len(w) == 0 {
		return true
	}
	counts := slices.Collect(maps.Values(w))
	return slices.Max(counts)-slices.Min(counts) <= 1
}

func TestExecutors(t *testing.T) {
	got := Executors(map[string]int32{"spout": 2, "bolt": 3, "idle": 0, "neg": -1})
	want := []Executor{
		{"bolt", 1, 1}, {"bolt", 2, 2}, {"bolt", 3, 3},
		{"spout", 4, 4}, {"spout", 5, 5},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Executors = %v, want %v", got, want)
	}
	if got := Executors(nil); len(got) != 0 {
		t.Fatalf("Executors(nil) = %v, want none", got)
	}
}

func TestWorkedExample(t *testing.T) {
	sups := []Supervisor{
		{ID: "b", Ports: []int32{6701, 6700}},
		{ID: "a", Ports: []int32{6700, 6701}},
	}
	t1 := Topology{ID: "t1", NumWorkers: 2, Executors: Executors(map[string]int32{"spout": 1, "bolt": 3})}
	t2 := Topology{ID: "t2", NumWorkers: 1, Executors: Executors(map[string]int32{"x": 1})}
	got := Schedule([]Topology{t2, t1}, sups, nil)

	// t1 first: a and b both have two free slots, so a:6700 then b (no t1
	// worker yet) :6700; executors alternate between them. t2 then takes
	// the lowest of the equally free a and b.
	want := map[string]Assignment{
		"t1": {
			{"bolt", 1, 1}:  {"a", 6700},
			{"bolt", 2, 2}:  {"b", 6700},
			{"bolt", 3, 3}:  {"a", 6700},
			{"spout", 4, 4}: {"b", 6700},
		},
		"t2": {{"x", 1, 1}: {"a", 6701}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Schedule = %v, want %v", got, want)
	}
}

func TestSpreadAcrossSupervisors(t *testing.T) {
	sups := supervisors(4, 4)
	got := Schedule([]Topology{topology("t", 4, 8)}, sups, nil)
	check(t, []Topology{topology("t", 4, 8)}, sups, got)
	perSup := map[string]int{}
	for s, n := range workers(got["t"]) {
		perSup[s.SupervisorID]++
		if n != 2 {
			t.Errorf("slot %v has %d executors, want 2", s, n)
		}
	}
	if len(perSup) != 4 {
		t.Errorf("4 workers on %d supervisors, want 4: %v", len(perSup), got["t"])
	}

	// Eight workers on four supervisors: two on each.
	got = Schedule([]Topology{topology("t", 8, 8)}, sups, nil)
	perSup = map[string]int{}
	for s := range workers(got["t"]) {
		perSup[s.SupervisorID]++
	}
	for id, n := range perSup {
		if n != 2 {
			t.Errorf("supervisor %s hosts %d workers, want 2", id, n)
		}
	}

	// With equal host counts the supervisor with most free slots wins: a
	// has one slot free (the other is t0's), b has two.
	sups = []Supervisor{{ID: "a", Ports: []int32{1, 2}}, {ID: "b", Ports: []int32{1, 2}}}
	cur := map[string]Assignment{"t0": {{"c", 1, 1}: {"a", 1}}}
	topos := []Topology{topology("t0", 1, 1), topology("t1", 1, 1)}
	got = Schedule(topos, sups, cur)
	if s := got["t1"][Executor{"c", 1, 1}]; s != (Slot{"b", 1}) {
		t.Errorf("t1 placed on %v, want b:1 (most free slots)", s)
	}
}

func TestEvenExecutors(t *testing.T) {
	sups := supervisors(5, 3)
	var topos []Topology
	for i := range 6 {
		topos = append(topos, topology(fmt.Sprintf("t%d", i), 1+i%4, int32(3+5*i)))
	}
	got := Schedule(topos, sups, nil)
	check(t, topos, sups, got)
	for _, tp := range topos {
		if !spreadOK(got[tp.ID]) {
			t.Errorf("topology %s: uneven executors %v", tp.ID, workers(got[tp.ID]))
		}
		if n := len(workers(got[tp.ID])); n != tp.NumWorkers {
			t.Errorf("topology %s: %d workers, want %d", tp.ID, n, tp.NumWorkers)
		}
	}
}

func TestNotEnoughSlots(t *testing.T) {
	sups := supervisors(1, 2)
	topos := []Topology{topology("t", 4, 10)}
	got := Schedule(topos, sups, nil)
	check(t, topos, sups, got)
	w := workers(got["t"])
	if len(w) != 2 || len(got["t"]) != 10 {
		t.Fatalf("got %d executors on %d workers, want 10 on 2", len(got["t"]), len(w))
	}
	for s, n := range w {
		if n != 5 {
			t.Errorf("slot %v: %d executors, want 5", s, n)
		}
	}

	// A second topology finds no slot left and waits for one.
	topos = append(topos, topology("u", 1, 1))
	got = Schedule(topos, sups, got)
	check(t, topos, sups, got)
	if len(got["u"]) != 0 {
		t.Fatalf("u = %v, want empty", got["u"])
	}
	sups = append(sups, Supervisor{ID: "new", Ports: []int32{1}})
	got = Schedule(topos, sups, got)
	check(t, topos, sups, got)
	if s := got["u"][Executor{"c", 1, 1}]; s != (Slot{"new", 1}) {
		t.Fatalf("u placed on %v, want new:1", s)
	}
}

func TestZeroSlots(t *testing.T) {
	topos := []Topology{topology("t", 2, 3), topology("empty", 1, 0)}
	for _, sups := range [][]Supervisor{nil, {{ID: "s"}}} {
		got := Schedule(topos, sups, nil)
		check(t, topos, sups, got)
		for _, tp := range topos {
			if a, ok := got[tp.ID]; !ok || a == nil || len(a) != 0 {
				t.Errorf("supervisors %v: topology %s = %v, want empty", sups, tp.ID, a)
			}
		}
	}
}

func TestSupervisorDies(t *testing.T) {
	sups := supervisors(4, 2)
	topos := []Topology{topology("t1", 4, 12), topology("t2", 2, 5)}
	before := Schedule(topos, sups, nil)
	check(t, topos, sups, before)

	alive := sups[:0:0]
	for _, s := range sups {
		if s.ID != "s1" {
			alive = append(alive, s)
		}
	}
	after := Schedule(topos, alive, before)
	check(t, topos, alive, after)
	for _, tp := range topos {
		for e, s := range before[tp.ID] {
			if got := after[tp.ID][e]; s.SupervisorID != "s1" && got != s {
				t.Errorf("%s %v moved from %v to %v", tp.ID, e, s, got)
			}
		}
		// Free slots remain, so the executors of s1 found new workers.
		if n := len(workers(after[tp.ID])); n != tp.NumWorkers {
			t.Errorf("%s: %d workers after the death, want %d", tp.ID, n, tp.NumWorkers)
		}
	}
}

func TestRebalanceClears(t *testing.T) {
	sups := supervisors(4, 2)
	topos := []Topology{topology("t", 2, 8)}
	cur := Schedule(topos, sups, nil)

	// Without clearing, a lower NumWorkers moves nothing.
	topos[0].NumWorkers = 1
	if got := Schedule(topos, sups, cur); !reflect.DeepEqual(got, cur) {
		t.Fatalf("NumWorkers 2 -> 1 without clearing moved executors: %v -> %v", cur, got)
	}
	// A rebalance deletes the current assignment first.
	topos[0].NumWorkers = 4
	delete(cur, "t")
	cur = Schedule(topos, sups, cur)
	if n := len(workers(cur["t"])); n != 4 || !spreadOK(cur["t"]) {
		t.Fatalf("after increase: %v", workers(cur["t"]))
	}
	topos[0].NumWorkers = 1
	delete(cur, "t")
	cur = Schedule(topos, sups, cur)
	if n := len(workers(cur["t"])); n != 1 || len(cur["t"]) != 8 {
		t.Fatalf("after decrease: %v", workers(cur["t"]))
	}

	// New executors of a topology with more kept workers than NumWorkers go
	// to its first NumWorkers slots only.
	topos[0].NumWorkers = 2
	delete(cur, "t")
	cur = Schedule(topos, sups, cur)
	first := slices.MinFunc(slices.Collect(maps.Keys(workers(cur["t"]))), compareSlots)
	topos[0].NumWorkers = 1
	topos[0].Executors = append(topos[0].Executors, Executor{"d", 9, 9})
	got := Schedule(topos, sups, cur)
	if s := got["t"][Executor{"d", 9, 9}]; s != first {
		t.Fatalf("new executor on %v, want %v", s, first)
	}
}

// A topology placed on fewer workers than it wants, for lack of slots,
// grows when slots free up: it takes them, and its fullest workers hand
// over their last executors, so that it ends evenly spread; a topology
// without any slot is served first.
func TestShortTopologyGrows(t *testing.T) {
	sups := []Supervisor{{ID: "a", Ports: []int32{1, 2, 3}}}
	topos := []Topology{topology("other", 1, 1), topology("wc", 4, 8)}
	cur := Schedule(topos, sups, nil)
	check(t, topos, sups, cur)
	if n := len(workers(cur["wc"])); n != 2 {
		t.Fatalf("wc on %d workers with 3 slots and another topology, want 2", n)
	}

	// "other" is killed: its slot is free and wc grows into it.
	topos = topos[1:]
	delete(cur, "other")
	got := Schedule(topos, sups, cur)
	check(t, topos, sups, got)
	if w := workers(got["wc"]); len(w) != 3 || !spreadOK(got["wc"]) {
		t.Fatalf("after a slot freed: wc on %v, want 3 even workers", w)
	}
	moved := 0
	for e, s := range cur["wc"] {
		if got["wc"][e] != s {
			moved++
		}
	}
	if moved != 2 {
		t.Errorf("%d executors moved, want 2 (one from each full worker)", moved)
	}
	if again := Schedule(topos, sups, got); !reflect.DeepEqual(again, got) {
		t.Fatalf("grown topology moved again: %v -> %v", got, again)
	}

	// A new supervisor's slot goes to a topology without any slot before
	// one that only lacks a worker.
	topos = append(topos, topology("x", 1, 1))
	got = Schedule(topos, sups, got)
	if len(got["x"]) != 0 {
		t.Fatalf("x placed with no slot free: %v", got["x"])
	}
	sups = append(sups, Supervisor{ID: "b", Ports: []int32{1}})
	got = Schedule(topos, sups, got)
	check(t, topos, sups, got)
	if s := got["x"][Executor{"c", 1, 1}]; s != (Slot{"b", 1}) {
		t.Fatalf("x placed on %v, want b:1", s)
	}
	if n := len(workers(got["wc"])); n != 3 {
		t.Fatalf("wc on %d workers, want 3 (no slot left to grow)", n)
	}
}

func compareSlots(a, b Slot) int {
	if a.SupervisorID != b.SupervisorID {
		if a.SupervisorID < b.SupervisorID {
			return -1
		}
		return 1
	}
	return int(a.Port - b.Port)
}

func TestChangedTopology(t *testing.T) {
	sups := supervisors(3, 2)
	topos := []Topology{topology("t", 2, 4), topology("gone", 2, 4)}
	cur := Schedule(topos, sups, nil)
	gone := workers(cur["gone"])

	// Parallelism 4 -> 6: old executors stay, tasks 5 and 6 are placed,
	// evenly, on t's workers.
	topos = []Topology{topology("t", 2, 6), topology("u", 2, 2)}
	got := Schedule(topos, sups, cur)
	check(t, topos, sups, got)
	for e, s := range cur["t"] {
		if got["t"][e] != s {
			t.Errorf("%v moved", e)
		}
	}
	if !spreadOK(got["t"]) || len(workers(got["t"])) != 2 {
		t.Errorf("t: %v", workers(got["t"]))
	}
	if _, ok := got["gone"]; ok {
		t.Errorf("killed topology still assigned")
	}
	// u gets the slots the killed topology freed (the only free ones).
	for s := range workers(got["u"]) {
		if gone[s] == 0 {
			t.Errorf("u on %v, want a slot freed by the killed topology", s)
		}
	}

	// Parallelism 6 -> 2: the stale executors go.
	topos[0] = topology("t", 2, 2)
	got = Schedule(topos, sups, got)
	check(t, topos, sups, got)
	if len(got["t"]) != 2 {
		t.Errorf("t: %v", got["t"])
	}
}

func TestSharedSlotInCurrent(t *testing.T) {
	sups := supervisors(2, 1)
	e := Executor{"c", 1, 1}
	cur := map[string]Assignment{"a": {e: {"s0", 6700}}, "b": {e: {"s0", 6700}}}
	topos := []Topology{topology("b", 1, 1), topology("a", 1, 1)}
	got := Schedule(topos, sups, cur)
	check(t, topos, sups, got)
	if got["a"][e] != (Slot{"s0", 6700}) || got["b"][e] != (Slot{"s1", 6700}) {
		t.Fatalf("got %v, want a kept on s0, b moved to s1", got)
	}
}

func TestDeterminism(t *testing.T) {
	sups := supervisors(7, 3)
	var topos []Topology
	for i := range 9 {
		topos = append(topos, topology(fmt.Sprintf("t%d", i), 1+i%3, int32(1+i)))
	}
	want := Schedule(topos, sups, nil)
	for i := range 20 {
		ts := slices.Clone(topos)
		ss := slices.Clone(sups)
		slices.Reverse(ts)
		if i%2 == 0 {
			slices.Reverse(ss)
		}
		ss[i%len(ss)].Ports = slices.Clone(ss[i%len(ss)].Ports)
		slices.Reverse(ss[i%len(ss)].Ports)
		if got := Schedule(ts, ss, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: different result for reordered input", i)
		}
	}
}

func TestDoesNotModifyInput(t *testing.T) {
	sups := supervisors(2, 2)
	topos := []Topology{topology("t", 2, 4)}
	cur := Schedule(topos, sups, nil)
	snapshot := map[string]Assignment{"t": maps.Clone(cur["t"])}
	got := Schedule(topos, sups[:1], cur)
	if !reflect.DeepEqual(cur, snapshot) {
		t.Fatalf("current modified")
	}
	got["t"][Executor{"x", 9, 9}] = Slot{}
	if _, ok := cur["t"][Executor{"x", 9, 9}]; ok {
		t.Fatalf("result shares a map with current")
	}
	same := Schedule(topos, sups, cur)
	same["t"][Executor{"x", 9, 9}] = Slot{}
	if _, ok := cur["t"][Executor{"x", 9, 9}]; ok {
		t.Fatalf("unchanged result shares a map with current")
	}
}
