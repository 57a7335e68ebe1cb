package assign

import (
	"cmp"
	"slices"
)

// slots is the index of the alive slots built once per Schedule call. Slots
// are numbered in (supervisor ID, port) order, supervisors in ID order, so
// comparing numbers compares slots. It tracks which topology uses each slot
// and how many slots each supervisor has free.
type slots struct {
	slots   []Slot
	sup     []int32 // supervisor of each slot
	owner   []int32 // topology (position in ID order) using each slot, or -1
	supByID map[string]int32

	first []int32 // per supervisor: its first slot; then len(slots)
	next  []int32 // per supervisor: its first slot not known to be used
	free  []int32 // per supervisor: slots nobody uses

	// Placement state of the topology being placed.
	tree    maxTree // free counts; supervisors in hosting read 0
	hosts   []int32 // per supervisor: workers of the topology on it
	hosting []int32 // supervisors with hosts > 0

	// Scratch space reused across topologies.
	unplaced  []Executor
	keptSlots []int32
	workers   []worker
	heap      []int32
}

// newSlots indexes the slots of supervisors. A supervisor listed twice has
// the union of its ports; a port listed twice is one slot.
func newSlots(supervisors []Supervisor) *slots {
	order := make([]int, len(supervisors))
	total := 0
	for i := range supervisors {
		order[i] = i
		total += len(supervisors[i].Ports)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(supervisors[a].ID, supervisors[b].ID)
	})

	x := &slots{
		slots:   make([]Slot, 0, total),
		sup:     make([]int32, 0, total),
		supByID: make(map[string]int32, len(supervisors)),
	}
	ports := make([]int32, 0, total)
	for i := 0; i < len(order); {
		id := supervisors[order[i]].ID
		ports = ports[:0]
		for ; i < len(order) && supervisors[order[i]].ID == id; i++ {
			ports = append(ports, supervisors[order[i]].Ports...)
		}
		slices.Sort(ports)
		ports = slices.Compact(ports)
		s := int32(len(x.first))
		x.supByID[id] = s
		x.first = append(x.first, int32(len(x.slots)))
		for _, p := range ports {
			x.slots = append(x.slots, Slot{SupervisorID: id, Port: p})
			x.sup = append(x.sup, s)
		}
		x.free = append(x.free, int32(len(ports)))
	}
	x.next = slices.Clone(x.first)
	x.first = append(x.first, int32(len(x.slots)))
	x.owner = make([]int32, len(x.slots))
	for i := range x.owner {
		x.owner[i] = -1
	}
	x.hosts = make([]int32, len(x.next))
	return x
}

// index returns the number of slot s, or -1 if it is dead.
func (x *slots) index(s Slot) int32 {
	sup, ok := x.supByID[s.SupervisorID]
	if !ok {
		return -1
	}
	lo, hi := x.first[sup], x.first[sup+1]
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		switch p := x.slots[m].Port; {
		case p == s.Port:
			return m
		case p < s.Port:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// slotCache remembers the numbers of the few slots of one topology, which
// its executors name over and over, to spare most index look-ups.
type slotCache struct {
	n     int
	slots [8]Slot
	index [8]int32
}

func (c *slotCache) lookup(x *slots, s Slot) int32 {
	for j := range c.n {
		if c.slots[j] == s {
			return c.index[j]
		}
	}
	i := x.index(s)
	if c.n < len(c.slots) {
		c.slots[c.n], c.index[c.n] = s, i
		c.n++
	}
	return i
}

// claim gives alive slot i to topology t unless another topology has it,
// and reports whether t now uses it.
func (x *slots) claim(i, t int32) bool {
	switch x.owner[i] {
	case t:
		return true
	case -1:
		x.owner[i] = t
		x.free[x.sup[i]]--
		return true
	}
	return false
}

// startPlacing is called once every kept slot is claimed, before the first
// topology is placed.
func (x *slots) startPlacing() {
	x.tree = newMaxTree(x.free)
}

// host records a worker of the topology being placed on supervisor s, which
// hides s from the tree until done.
func (x *slots) host(s int32) {
	if x.hosts[s] == 0 {
		x.hosting = append(x.hosting, s)
		x.tree.set(s, 0)
	}
	x.hosts[s]++
}

// done ends the placement of a topology.
func (x *slots) done() {
	for _, s := range x.hosting {
		x.hosts[s] = 0
		x.tree.set(s, x.free[s])
	}
	x.hosting = x.hosting[:0]
}

// take gives topology t a free slot chosen to spread its workers: on a
// supervisor hosting fewest of its workers, then with most free slots, then
// the lowest supervisor ID and port. It returns -1 if no slot is free.
func (x *slots) take(t int32) int32 {
	s := int32(-1)
	if x.tree.max() > 0 {
		// A supervisor without workers of t beats any with them.
		s = x.tree.leftmostMax()
	} else {
		for _, h := range x.hosting {
			if x.free[h] == 0 {
				continue
			}
			if s < 0 || x.hosts[h] < x.hosts[s] ||
				x.hosts[h] == x.hosts[s] && (x.free[h] > x.free[s] || x.free[h] == x.free[s] && h < s) {
				s = h
			}
		}
		if s < 0 {
			return -1
		}
	}
	i := x.next[s]
	for x.owner[i] != -1 {
		i++
	}
	x.next[s] = i + 1
	x.owner[i] = t
	x.free[s]--
	x.host(s)
	return i
}

// maxTree is a segment tree over per-supervisor free counts that finds the
// lowest supervisor with the most free slots in O(log n).
type maxTree struct {
	n int     // leaves, a power of two
	v []int32 // v[1] is the root; leaves start at n
}

func newMaxTree(vals []int32) maxTree {
	n := 1
	for n < len(vals) {
		n *= 2
	}
	t := maxTree{n: n, v: make([]int32, 2*n)}
	copy(t.v[n:], vals)
	for i := n - 1; i > 0; i-- {
		t.v[i] = max(t.v[2*i], t.v[2*i+1])
	}
	return t
}

func (t *maxTree) max() int32 { return t.v[1] }

func (t *maxTree) set(s, val int32) {
	i := t.n + int(s)
	t.v[i] = val
	for i /= 2; i > 0; i /= 2 {
		t.v[i] = max(t.v[2*i], t.v[2*i+1])
	}
}

func (t *maxTree) leftmostMax() int32 {
	i := 1
	for i < t.n {
		if t.v[2*i] >= t.v[2*i+1] {
			i = 2 * i
		} else {
			i = 2*i + 1
		}
	}
	return int32(i - t.n)
}
