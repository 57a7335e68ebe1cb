package assign

import (
	"cmp"
	"maps"
	"slices"
)

// Placer is Schedule kept between calls, for a leader that schedules again
// whenever something changes: it holds the topologies, the live
// supervisors and the slot each topology uses, so that Place after a
// change costs work proportional to the change, not to the cluster.
//
// The decision is Schedule's, rule for rule (Schedule is a Placer used
// once): after any sequence of changes, Place gives what Schedule would
// give for the topologies and supervisors the Placer holds and, as the
// current assignments, the results it adopted and the currents set since.
//
// A Placer is not safe for concurrent use.
type Placer struct {
	sups map[string]*supState
	tree supTree
	tops map[string]*topoState

	dirty    map[string]*topoState // to keep again: new, changed, or their slots changed
	waiting  map[string]*topoState // executors without a slot: placed again at every Place while a slot is free
	proposed map[string]*topoState // results of the last Place not adopted yet
	free     int                   // slots nobody uses, summed over the supervisors

	// Scratch space reused across placements.
	hosting []*supState
	workers []worker
	heap    []int32
}

// NewPlacer returns an empty Placer.
func NewPlacer() *Placer {
	return &Placer{sups: map[string]*supState{}, tops: map[string]*topoState{},
		dirty: map[string]*topoState{}, waiting: map[string]*topoState{}, proposed: map[string]*topoState{}}
}

// supState is one live supervisor and who uses its slots.
type supState struct {
	id     string
	leaf   int32        // its leaf in the tree, while it lives
	ports  []int32      // sorted, distinct
	owner  []*topoState // per port; nil when free
	free   int32
	hosts  int32 // workers of the topology being placed
	hidden bool  // hosts > 0: the tree shows it as full
}

// topoState is one topology, its input and what it holds.
type topoState struct {
	id       string
	workers  int        // NumWorkers, at least 1
	execs    []Executor // distinct, in the given order
	distinct bool       // the given executors were distinct
	current  Assignment // the current assignment: given, or the last result adopted
	result   Assignment // the last Place's result
	kept     bool       // result is current, kept as it is (the same map)
	held     []slotRef  // the slots it claimed
}

type slotRef struct {
	sup *supState
	i   int32
}

func (s slotRef) slot() Slot { return Slot{SupervisorID: s.sup.id, Port: s.sup.ports[s.i]} }

func compareRefs(a, b slotRef) int {
	return cmp.Or(cmp.Compare(a.sup.id, b.sup.id), cmp.Compare(a.i, b.i))
}

// SetSupervisor adds supervisor s or changes its ports (a port listed
// twice is one slot). Topologies on its ports that are gone are placed
// again at the next Place.
func (p *Placer) SetSupervisor(s Supervisor) {
	ports := slices.Clone(s.Ports)
	slices.Sort(ports)
	ports = slices.Compact(ports)
	if old, ok := p.sups[s.ID]; ok {
		if slices.Equal(old.ports, ports) {
			return
		}
		p.RemoveSupervisor(s.ID)
	}
	sup := &supState{id: s.ID, ports: ports, owner: make([]*topoState, len(ports)), free: int32(len(ports))}
	p.sups[s.ID] = sup
	p.free += len(ports)
	sup.leaf = p.tree.add(sup)
}

// RemoveSupervisor forgets a supervisor (dead, or gone): the topologies on
// its slots are placed again at the next Place.
func (p *Placer) RemoveSupervisor(id string) {
	sup, ok := p.sups[id]
	if !ok {
		return
	}
	for _, t := range sup.owner {
		if t != nil {
			p.release(t)
			p.dirty[t.id] = t
		}
	}
	delete(p.sups, id)
	p.free -= int(sup.free)
	p.tree.remove(sup.leaf)
}

// Supervisors is how many supervisors the Placer holds.
func (p *Placer) Supervisors() int { return len(p.sups) }

// FreeSlots is how many slots of the supervisors it holds no topology
// uses, as of the last Place (and the changes since).
func (p *Placer) FreeSlots() int { return p.free }

// SetTopology adds topology t or changes it, with its current assignment
// (nil: none). Place keeps it again, as Schedule would with this current.
func (p *Placer) SetTopology(t Topology, current Assignment) {
	tp, ok := p.tops[t.ID]
	if !ok {
		tp = &topoState{id: t.ID}
		p.tops[t.ID] = tp
	}
	tp.workers = max(t.NumWorkers, 1)
	tp.execs, tp.distinct = t.Executors, true
	if !sortedByTask(t.Executors) {
		if d := dedupe(t.Executors); d != nil {
			tp.execs, tp.distinct = d, false
		}
	}
	tp.current = current
	delete(p.proposed, t.ID)
	p.dirty[t.ID] = tp
}

// RemoveTopology forgets a topology; its slots are free at the next Place.
func (p *Placer) RemoveTopology(id string) {
	t, ok := p.tops[id]
	if !ok {
		return
	}
	p.release(t)
	delete(p.tops, id)
	delete(p.dirty, id)
	delete(p.waiting, id)
	delete(p.proposed, id)
}

// Result is topology id's assignment as the last Place decided it; nil for
// a topology the Placer does not hold. It is shared: do not modify it.
func (p *Placer) Result(id string) Assignment {
	if t, ok := p.tops[id]; ok {
		return t.result
	}
	return nil
}

// Adopt says that the caller makes topology id's last result its current
// assignment (it writes it): the next Place keeps it as Schedule keeps an
// unchanged topology. A result not adopted is not current: the topology is
// kept again from the current it had, as Schedule would with that current.
func (p *Placer) Adopt(id string) {
	if t, ok := p.proposed[id]; ok {
		t.current = t.result
		delete(p.proposed, id)
	}
}

// Place decides again what changed since the last call, and returns the
// topologies it decided, in id order: those set or removed from their
// slots since, and those that wait for a slot. The others' results are
// unchanged. A result that differs from its topology's current assignment
// is a proposal: Adopt it, or the next Place decides it again from the
// current.
func (p *Placer) Place() []string {
	for id, t := range p.proposed {
		p.dirty[id] = t // not adopted: decide again from its current
	}
	clear(p.proposed)
	decided, pending := p.keepDirty()
	if p.free > 0 { // with no slot free, what waits would get none
		for id, t := range p.waiting {
			if _, ok := pending[id]; !ok {
				pending[id] = t
				decided = append(decided, id)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		p.place(pending[id])
	}
	decided = p.growShort(decided)
	slices.Sort(decided)
	return decided
}

// growShort grows, in id order while a slot is free, every topology whose
// executors all have a slot but on fewer workers than it wants (Schedule's
// rule 3b), and returns decided with those it grew added.
func (p *Placer) growShort(decided []string) []string {
	if p.free == 0 {
		return decided
	}
	var short []string
	for id, t := range p.waiting {
		if len(t.result) == len(t.execs) {
			short = append(short, id)
		}
	}
	if len(short) == 0 {
		return decided
	}
	seen := make(map[string]bool, len(decided))
	for _, id := range decided {
		seen[id] = true
	}
	slices.Sort(short)
	for _, id := range short {
		if p.free == 0 {
			break
		}
		p.grow(p.tops[id])
		if !seen[id] {
			decided = append(decided, id)
		}
	}
	return decided
}

// grow places t again from its result, with room made for the workers it
// lacks (makeRoom) on free slots.
func (p *Placer) grow(t *topoState) {
	res := maps.Clone(t.result) // t.result may be its current
	keptSlots := make([]slotRef, 0, len(t.execs))
	for _, e := range t.execs {
		ref, _ := p.lookup(res[e]) // held by t: alive
		keptSlots = append(keptSlots, ref)
	}
	keptSlots, unplaced := p.makeRoom(t, res, keptSlots)
	if len(unplaced) == 0 {
		return
	}
	p.spread(t, res, keptSlots, unplaced)
	t.result, t.kept = res, false
	p.noteWaiting(t)
	if !maps.Equal(res, t.current) {
		p.proposed[t.id] = t
	} else {
		delete(p.proposed, t.id)
	}
}

// keepDirty keeps every dirty topology again, in id order, from its
// current assignment. It returns the ids it kept, and those that are not
// unchanged: pending, to place. A slot two topologies claim goes to the
// lower id; the other is kept again.
func (p *Placer) keepDirty() (decided []string, pending map[string]*topoState) {
	pending = map[string]*topoState{}
	order := make(idHeap, 0, len(p.dirty))
	for _, t := range p.dirty {
		order.push(t)
		p.release(t)
	}
	clear(p.dirty)
	for len(order) > 0 {
		// A topology is pushed once: dirty ones hold nothing while they
		// wait, and one a lower id takes from is released whole.
		t := order.pop()
		decided = append(decided, t.id)
		if p.keep(t, &order) {
			t.result, t.kept = t.current, true
			if t.result == nil {
				t.result = Assignment{}
			}
			p.noteWaiting(t)
			continue
		}
		pending[t.id] = t
	}
	return decided, pending
}

// keep claims for t the alive slots of its current entries, taking one
// from a topology with a higher id (which order keeps again), and reports
// whether t is unchanged: nothing dropped, every executor covered.
func (p *Placer) keep(t *topoState, order *idHeap) bool {
	kept, dropped := 0, false
	for _, e := range t.execs {
		s, ok := t.current[e]
		if !ok {
			continue
		}
		ref, alive := p.lookup(s)
		if !alive {
			dropped = true
			continue
		}
		switch o := ref.sup.owner[ref.i]; {
		case o == t:
		case o == nil:
			p.claim(t, ref)
		case t.id < o.id:
			p.release(o)
			order.push(o)
			p.claim(t, ref)
		default:
			dropped = true
			continue
		}
		kept++
	}
	return !dropped && kept == len(t.execs) && kept == len(t.current) && t.distinct
}

// lookup finds slot s among the live ones.
func (p *Placer) lookup(s Slot) (slotRef, bool) {
	sup, ok := p.sups[s.SupervisorID]
	if !ok {
		return slotRef{}, false
	}
	i, found := slices.BinarySearch(sup.ports, s.Port)
	return slotRef{sup, int32(i)}, found
}

func (p *Placer) claim(t *topoState, ref slotRef) {
	ref.sup.owner[ref.i] = t
	ref.sup.free--
	p.free--
	p.tree.update(ref.sup.leaf)
	t.held = append(t.held, ref)
}

// release frees every slot t holds.
func (p *Placer) release(t *topoState) {
	for _, ref := range t.held {
		if p.sups[ref.sup.id] == ref.sup && ref.sup.owner[ref.i] == t {
			ref.sup.owner[ref.i] = nil
			ref.sup.free++
			p.free++
			p.tree.update(ref.sup.leaf)
		}
	}
	t.held = t.held[:0]
}

// place builds t's result: its kept entries plus a slot for every other
// executor, as far as slots allow (Schedule's rule 3).
func (p *Placer) place(t *topoState) {
	res := make(Assignment, len(t.execs))
	var keptSlots []slotRef
	var unplaced []Executor
	for _, e := range t.execs {
		if s, ok := t.current[e]; ok {
			if ref, alive := p.lookup(s); alive && ref.sup.owner[ref.i] == t {
				res[e] = s
				keptSlots = append(keptSlots, ref)
				continue
			}
		}
		unplaced = append(unplaced, e)
	}
	if len(unplaced) > 0 {
		p.spread(t, res, keptSlots, unplaced)
	}
	t.result, t.kept = res, false
	p.noteWaiting(t)
	if !maps.Equal(res, t.current) {
		p.proposed[t.id] = t
	}
}

// noteWaiting puts t among the topologies placed again while a slot is
// free if its result lacks an executor or a worker (short), and takes it
// out otherwise.
func (p *Placer) noteWaiting(t *topoState) {
	if len(t.result) < len(t.execs) || workerCount(t.result) < t.wanted() {
		p.waiting[t.id] = t
		return
	}
	delete(p.waiting, t.id)
}

// wanted is how many workers t should have: NumWorkers, but never more
// than it has executors to fill them.
func (t *topoState) wanted() int { return min(t.workers, len(t.execs)) }

// workerCount is how many distinct slots a holds.
func workerCount(a Assignment) int {
	slots := make(map[Slot]struct{}, len(a))
	for _, s := range a {
		slots[s] = struct{}{}
	}
	return len(slots)
}

// makeRoom is Schedule's rule 3b, for a topology t whose executors all
// have a slot (res, on keptSlots in t.execs order) but on fewer workers
// than it wants: with n slots free to take, each kept worker keeps
// only its first len(t.execs)/(workers+n) executors, and the others are
// returned as unplaced, for spread to deal out over the kept and new
// workers. With no slot free, or no worker lacking, nothing moves.
func (p *Placer) makeRoom(t *topoState, res Assignment, keptSlots []slotRef) ([]slotRef, []Executor) {
	have := workerCount(res)
	n := min(t.wanted()-have, p.free)
	if n <= 0 {
		return keptSlots, nil
	}
	limit := int32(len(t.execs) / (have + n)) // at least 1: wanted <= executors
	onSlot := map[slotRef]int32{}
	kept := keptSlots[:0]
	var unplaced []Executor
	for i, e := range t.execs {
		ref := keptSlots[i]
		if onSlot[ref] < limit {
			onSlot[ref]++
			kept = append(kept, ref)
			continue
		}
		delete(res, e)
		unplaced = append(unplaced, e)
	}
	return kept, unplaced
}

// spread adds to res, the kept entries of t on keptSlots, the unplaced
// executors, on at most t.workers slots.
func (p *Placer) spread(t *topoState, res Assignment, keptSlots []slotRef, unplaced []Executor) {
	defer p.done()

	// Kept workers in slot order, with their executor counts.
	slices.SortFunc(keptSlots, compareRefs)
	workers := p.workers[:0]
	refs := make([]slotRef, 0, t.workers)
	for _, ref := range keptSlots {
		if n := len(refs); n > 0 && refs[n-1] == ref {
			workers[n-1].execs++
			continue
		}
		refs = append(refs, ref)
		workers = append(workers, worker{slot: int32(len(refs) - 1), execs: 1})
		p.host(ref.sup)
	}
	workers = workers[:min(len(workers), t.workers)]
	refs = refs[:len(workers)]
	for need := min(t.workers-len(workers), len(unplaced)); need > 0; need-- {
		ref, ok := p.take(t)
		if !ok {
			break
		}
		refs = append(refs, ref)
		workers = append(workers, worker{slot: int32(len(refs) - 1)})
	}
	p.workers = workers
	if len(workers) == 0 {
		return
	}

	// A min-heap of workers by (executors, slot order).
	h := p.heap[:0]
	for i := range workers {
		h = append(h, int32(i))
	}
	p.heap = h
	less := func(a, b int32) bool {
		wa, wb := workers[a], workers[b]
		return wa.execs < wb.execs || wa.execs == wb.execs && a < b
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
	for _, e := range unplaced {
		w := &workers[h[0]]
		res[e] = refs[w.slot].slot()
		w.execs++
		siftDown(h, 0, less)
	}
}

// host records a worker of the topology being placed on sup, which hides
// sup from the tree until done.
func (p *Placer) host(sup *supState) {
	if sup.hosts == 0 {
		p.hosting = append(p.hosting, sup)
		sup.hidden = true
		p.tree.update(sup.leaf)
	}
	sup.hosts++
}

// done ends the placement of a topology.
func (p *Placer) done() {
	for _, sup := range p.hosting {
		sup.hosts, sup.hidden = 0, false
		if p.sups[sup.id] == sup {
			p.tree.update(sup.leaf)
		}
	}
	p.hosting = p.hosting[:0]
}

// take gives t a free slot chosen to spread its workers: on a supervisor
// hosting fewest of its workers, then with most free slots, then the
// lowest supervisor id and port. It reports false if no slot is free.
func (p *Placer) take(t *topoState) (slotRef, bool) {
	sup := p.tree.best() // a supervisor without workers of t beats any with them
	if sup == nil {
		for _, h := range p.hosting {
			if h.free == 0 {
				continue
			}
			if sup == nil || h.hosts < sup.hosts ||
				h.hosts == sup.hosts && (h.free > sup.free || h.free == sup.free && h.id < sup.id) {
				sup = h
			}
		}
		if sup == nil {
			return slotRef{}, false
		}
	}
	i := slices.Index(sup.owner, nil)
	ref := slotRef{sup, int32(i)}
	p.claim(t, ref)
	p.host(sup)
	return ref, true
}

// idHeap is a min-heap of topologies by id.
type idHeap []*topoState

func (h *idHeap) push(t *topoState) {
	*h = append(*h, t)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent].id <= s[i].id {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *idHeap) pop() *topoState {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	s = s[:n]
	for i := 0; ; {
		m := i
		if l := 2*i + 1; l < n && s[l].id < s[m].id {
			m = l
		}
		if r := 2*i + 2; r < n && s[r].id < s[m].id {
			m = r
		}
		if m == i {
			return top
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}
