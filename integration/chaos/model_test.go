package chaos_test

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
)

// The topology API as a sequential specification, for Porcupine
// (history_test.go records what clients saw). One partition per topology
// name: nothing the API promises relates two topologies.
//
// What the model follows (nimbus/lifecycle.go):
//
//	submit      absent or removed        -> ACTIVE
//	activate    ACTIVE, INACTIVE         -> ACTIVE       REBALANCING, KILLED: FailedPrecondition
//	deactivate  ACTIVE, INACTIVE         -> INACTIVE     REBALANCING, KILLED: FailedPrecondition
//	rebalance n ACTIVE, INACTIVE         -> REBALANCING(n); REBALANCING(n): no-op;
//	                                        REBALANCING(m != n), KILLED: FailedPrecondition
//	kill        any present              -> KILLED       (KILLED: no-op)
//	(the leader) REBALANCING             -> its previous status, once the wait is over
//	(the leader) KILLED                  -> removed, once the wait is over
//
// The leader's own two steps happen at moments no client sees, so the
// model lets them happen before any operation. An acknowledged write is
// applied exactly once between its call and its answer; a write whose
// outcome is unknown (Unavailable, DeadlineExceeded, "outcome unknown", the
// run ending) may be applied, or not, at any moment after its call: the
// model is nondeterministic and Porcupine follows every possibility.
//
// Reads (GetClusterInfo, GetTopologyInfo, and the NotFound a leader
// answers from its cache) are answered from a nimbus's watch-fed caches
// (docs/ARCHITECTURE.md sections 1 and 11), which may lag ZooKeeper. With
// readsMayLag, a read may return any status the topology has had up to
// that moment (never one it has not had yet, nor one it never had); without,
// it must return the status at that moment (linearizable reads).

// tStatus is a topology's state in the model.
type tStatus uint8

const (
	stAbsent tStatus = iota // never submitted
	stActive
	stInactive
	stRebalancing
	stKilled
	stRemoved // killed, and removed once its wait was over
)

// obs is what a read can see of a topology.
type obs uint8

const (
	obsAbsent obs = iota
	obsActive
	obsInactive
	obsRebalancing
	obsKilled
)

func (o obs) String() string {
	return [...]string{"absent", "ACTIVE", "INACTIVE", "REBALANCING", "KILLED"}[o]
}

func (s tStatus) obs() obs {
	switch s {
	case stActive:
		return obsActive
	case stInactive:
		return obsInactive
	case stRebalancing:
		return obsRebalancing
	case stKilled:
		return obsKilled
	}
	return obsAbsent
}

func (s tStatus) present() bool { return s != stAbsent && s != stRemoved }

// tState is one topology's state; comparable, so Porcupine's == merges
// equal states.
type tState struct {
	st   tStatus
	prev tStatus // REBALANCING: the status it returns to
	plan int32   // REBALANCING: the pending number of workers
	seen uint8   // the obs bits the topology has shown, current included
}

func (s tState) with(st tStatus) tState {
	s.st = st
	s.seen |= 1 << st.obs()
	return s
}

func (s tState) String() string {
	var seen []string
	for o := obsAbsent; o <= obsKilled; o++ {
		if s.seen&(1<<o) != 0 {
			seen = append(seen, o.String())
		}
	}
	cur := s.st.obs().String()
	switch s.st {
	case stRemoved:
		cur = "removed"
	case stRebalancing:
		cur = fmt.Sprintf("REBALANCING to %d workers, then %s", s.plan, s.prev.obs())
	}
	return fmt.Sprintf("%s (has shown %s)", cur, strings.Join(seen, ", "))
}

// opKind is an operation of the API.
type opKind uint8

const (
	opSubmit opKind = iota
	opKill
	opActivate
	opDeactivate
	opRebalance
	opStatus // GetTopologyInfo
	opList   // GetClusterInfo: one topology's part of it, after Partition
)

func (k opKind) String() string {
	return [...]string{"submit", "kill", "activate", "deactivate", "rebalance", "status", "list"}[k]
}

func (k opKind) read() bool { return k == opStatus || k == opList }

// opInput is an operation's input.
type opInput struct {
	kind    opKind
	name    string // "" for a whole list
	workers int32  // rebalance: the plan
}

// result is how a write ended.
type result uint8

const (
	resOK       result = iota
	resRejected        // a definite answer that changed nothing
	resUnknown         // may have been applied, then or later
	resMaybe           // an earlier attempt's effect, if any (see history.record)
)

// opOutput is an operation's outcome.
type opOutput struct {
	res   result
	code  codes.Code     // resRejected: the answer's code
	blind bool           // resRejected: refused before the topology was looked at (NOT_LEADER, ABORTED)
	why   string         // resRejected, resUnknown: the error, for the visualization
	obs   obs            // a read's (or a NotFound's) observation
	list  map[string]obs // a whole list, before Partition
}

// topologyModel is the model; see the comment at the top of this file.
func topologyModel(readsMayLag bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByName,
		Init:      func() []any { return []any{tState{seen: 1 << obsAbsent}} },
		Step: func(state, input, output any) []any {
			return step(state.(tState), input.(opInput), output.(opOutput), readsMayLag)
		},
		DescribeOperation: describeOp,
		DescribeState:     func(state any) string { return state.(tState).String() },
	}
	return nm.ToModel()
}

// step returns every state the topology may be in after the operation,
// none if it cannot have answered so.
func step(s tState, in opInput, out opOutput, readsMayLag bool) []any {
	var next []any
	add := func(n tState) {
		if !slices.Contains(next, any(n)) {
			next = append(next, n)
		}
	}
	for _, s := range settle(s) {
		if in.kind.read() {
			if sees(s, out.obs, readsMayLag) {
				add(s)
			}
			continue
		}
		applied, ok := apply(s, in)
		switch out.res {
		case resOK:
			if ok {
				add(applied)
			}
		case resUnknown, resMaybe:
			add(s)
			if ok {
				add(applied)
			}
		case resRejected:
			if rejects(s, in, out, readsMayLag) {
				add(s)
			}
		}
	}
	return next
}

// settle is s, and s after the leader's own pending step, if any.
func settle(s tState) []tState {
	switch s.st {
	case stRebalancing:
		done := s.with(s.prev)
		done.prev, done.plan = stAbsent, 0
		return []tState{s, done}
	case stKilled:
		return []tState{s, s.with(stRemoved)}
	}
	return []tState{s}
}

// apply is the write's effect on s, or false if s makes the leader refuse
// it.
func apply(s tState, in opInput) (tState, bool) {
	live := s.st == stActive || s.st == stInactive
	switch in.kind {
	case opSubmit:
		if s.st.present() {
			return s, false
		}
		return s.with(stActive), true
	case opKill:
		if !s.st.present() {
			return s, false
		}
		n := s.with(stKilled)
		n.prev, n.plan = stAbsent, 0
		return n, true
	case opActivate, opDeactivate:
		if !live {
			return s, false
		}
		if in.kind == opActivate {
			return s.with(stActive), true
		}
		return s.with(stInactive), true
	case opRebalance:
		if s.st == stRebalancing && s.plan == in.workers {
			return s, true // the same plan again: a no-op
		}
		if !live {
			return s, false
		}
		n := s.with(stRebalancing)
		n.prev, n.plan = s.st, in.workers
		return n, true
	}
	return s, false
}

// sees: a read in state s may return o.
func sees(s tState, o obs, readsMayLag bool) bool {
	if readsMayLag {
		return s.seen&(1<<o) != 0
	}
	return s.st.obs() == o
}

// rejects: the leader may have refused the write in state s with out's
// answer (and changed nothing).
func rejects(s tState, in opInput, out opOutput, readsMayLag bool) bool {
	if out.blind {
		return true
	}
	switch out.code {
	case codes.NotFound: // found missing in the leader's cache, or in ZooKeeper
		return sees(s, obsAbsent, readsMayLag)
	case codes.AlreadyExists: // the leader's cache, then ZooKeeper, have the name
		if readsMayLag {
			return s.seen&^(1<<obsAbsent) != 0
		}
		return s.st.present()
	case codes.FailedPrecondition: // a fresh read of the StormBase: not the cache
		switch in.kind {
		case opActivate, opDeactivate:
			return s.st == stRebalancing || s.st == stKilled
		case opRebalance:
			return s.st == stKilled || s.st == stRebalancing && s.plan != in.workers
		}
		return false
	}
	return false // history.classify makes every other refusal blind
}

// partitionByName splits the history by topology name, a whole list into
// what it says of each topology the history names, leaving out the reads
// that cannot change the check's answer (collapse).
func partitionByName(history []porcupine.Operation) [][]porcupine.Operation {
	return partition(history, true)
}

// partition is partitionByName; without collapse it keeps every read.
//
// A long run reads the whole list thousands of times and names thousands
// of topologies: every list read in every topology's partition made
// millions of operations, and a 1,000-fault run's check ran the machine
// out of memory. Most of them repeat the read before: the same
// observation, with nothing of the topology returning between the two.
func partition(history []porcupine.Operation, collapse bool) [][]porcupine.Operation {
	own := map[string][]porcupine.Operation{}
	var lists []porcupine.Operation
	for _, op := range history {
		if in := op.Input.(opInput); in.kind == opList && in.name == "" {
			lists = append(lists, op)
		} else {
			own[in.name] = append(own[in.name], op)
		}
	}
	byCall := func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) }
	slices.SortStableFunc(lists, byCall)
	names := slices.Sorted(maps.Keys(own))
	out := make([][]porcupine.Operation, 0, len(names))
	for _, n := range names {
		ops := own[n]
		slices.SortStableFunc(ops, byCall)
		c := collapser{keepAll: !collapse}
		for i, j := 0, 0; i < len(ops) || j < len(lists); {
			if j == len(lists) || i < len(ops) && ops[i].Call <= lists[j].Call {
				c.add(ops[i])
				i++
				continue
			}
			part := lists[j]
			part.Input = opInput{kind: opList, name: n}
			part.Output = opOutput{obs: lists[j].Output.(opOutput).list[n]} // absent if not listed
			c.add(part)
			j++
		}
		out = append(out, c.kept)
	}
	return out
}

// collapser keeps one partition's operations, given in call order, but a
// read r that observes what the last kept operation k, a read, observed,
// when nothing added before k returned between k's call and r's: r can
// always be linearized right after k, in the same state (reads change
// nothing the next operation could not change itself), so the history is
// linearizable with r if and only if it is without. The check's answer is
// the same; the visualization shows k for them all.
type collapser struct {
	keepAll bool
	kept    []porcupine.Operation
	returns returnHeap // of everything added: the calls still running
	bound   int64      // the earliest return, at or after k's call, of what was added before k
}

func (c *collapser) add(op porcupine.Operation) {
	defer heap.Push(&c.returns, op.Return)
	if !c.keepAll && len(c.kept) > 0 && op.Call < c.bound {
		k := c.kept[len(c.kept)-1]
		if op.Input.(opInput).kind.read() && k.Input.(opInput).kind.read() && op.Output.(opOutput).obs == k.Output.(opOutput).obs {
			return
		}
	}
	for c.returns.Len() > 0 && c.returns[0] < op.Call {
		heap.Pop(&c.returns) // ended before op's call, so before any later one's
	}
	c.bound = math.MaxInt64
	if c.returns.Len() > 0 {
		c.bound = c.returns[0]
	}
	c.kept = append(c.kept, op)
}

// returnHeap is a min-heap of return times (container/heap).
type returnHeap []int64

func (h returnHeap) Len() int           { return len(h) }
func (h returnHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h returnHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *returnHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *returnHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func describeOp(input, output any) string {
	in, out := input.(opInput), output.(opOutput)
	call := fmt.Sprintf("%s(%s)", in.kind, in.name)
	if in.kind == opRebalance {
		call = fmt.Sprintf("rebalance(%s, %d workers)", in.name, in.workers)
	}
	if in.kind.read() {
		return fmt.Sprintf("%s -> %s", call, out.obs)
	}
	switch out.res {
	case resRejected:
		return fmt.Sprintf("%s -> %s: %s", call, out.code, out.why)
	case resUnknown:
		return fmt.Sprintf("%s -> outcome unknown: %s", call, out.why)
	case resMaybe:
		return fmt.Sprintf("%s, an earlier attempt's effect, if any", call)
	}
	return call + " -> ok"
}
