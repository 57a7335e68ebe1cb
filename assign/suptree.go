package assign

// The tournament tree behind Placer.take. Spreading a topology's workers
// asks, worker by worker, for the supervisor with the most free slots;
// scanning every supervisor each time would make Place cost the cluster's
// size, not the change's.

// supTree is a segment tree over the supervisors that finds, in O(log n),
// the one with the most free slots, the lowest id on a tie, among those
// not hosting the topology being placed. Leaves are handed out when a
// supervisor is added and taken back when it is removed, so a change
// updates one path, never the whole tree.
type supTree struct {
	n      int         // leaves, a power of two
	leaves []*supState // by leaf; nil when unused
	nodes  []int32     // per node: the best leaf below it, or -1
	unused []int32     // leaves to hand out again
}

// shown is how many free slots the tree counts for sup.
func shown(sup *supState) int32 {
	if sup == nil || sup.hidden {
		return 0
	}
	return sup.free
}

// better reports whether leaf a beats leaf b (either may be -1).
func (t *supTree) better(a, b int32) bool {
	if a < 0 || b < 0 {
		return b < 0 && a >= 0
	}
	sa, sb := t.leaves[a], t.leaves[b]
	fa, fb := shown(sa), shown(sb)
	if fa != fb {
		return fa > fb
	}
	if sa == nil || sb == nil {
		return sb == nil && sa != nil
	}
	return sa.id < sb.id
}

func (t *supTree) add(sup *supState) int32 {
	var leaf int32
	if n := len(t.unused); n > 0 {
		leaf, t.unused = t.unused[n-1], t.unused[:n-1]
	} else {
		leaf = int32(len(t.leaves))
		t.leaves = append(t.leaves, nil)
		if len(t.leaves) > t.n {
			t.grow()
		}
	}
	t.leaves[leaf] = sup
	t.update(leaf)
	return leaf
}

func (t *supTree) remove(leaf int32) {
	t.leaves[leaf] = nil
	t.unused = append(t.unused, leaf)
	t.update(leaf)
}

// grow doubles the tree and rebuilds it: amortised, a constant per add.
func (t *supTree) grow() {
	t.n = max(2*t.n, 1)
	for t.n < len(t.leaves) {
		t.n *= 2
	}
	t.nodes = make([]int32, 2*t.n)
	for i := range t.n {
		t.nodes[t.n+i] = -1
		if i < len(t.leaves) && t.leaves[i] != nil {
			t.nodes[t.n+i] = int32(i)
		}
	}
	for i := t.n - 1; i > 0; i-- {
		t.nodes[i] = t.pick(t.nodes[2*i], t.nodes[2*i+1])
	}
}

func (t *supTree) pick(a, b int32) int32 {
	if t.better(b, a) {
		return b
	}
	return a
}

// update recomputes the path of leaf after its supervisor changed.
func (t *supTree) update(leaf int32) {
	i := t.n + int(leaf)
	t.nodes[i] = -1
	if t.leaves[leaf] != nil {
		t.nodes[i] = leaf
	}
	for i /= 2; i > 0; i /= 2 {
		t.nodes[i] = t.pick(t.nodes[2*i], t.nodes[2*i+1])
	}
}

// best is the supervisor with the most free slots shown, the lowest id on
// a tie; nil when none shows a free slot.
func (t *supTree) best() *supState {
	if t.n == 0 {
		return nil
	}
	b := t.nodes[1]
	if b < 0 || shown(t.leaves[b]) == 0 {
		return nil
	}
	return t.leaves[b]
}
