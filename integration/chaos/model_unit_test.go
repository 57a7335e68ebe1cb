package chaos_test

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The checker itself, without a cluster: hand-made histories that
// Porcupine must accept or reject under the model.

// hop is one operation of a hand-made history: called at call, answered at
// ret (pending: never).
func hop(client int, in opInput, call, ret int64, out opOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

var (
	acked    = opOutput{res: resOK}
	timedOut = opOutput{res: resUnknown, why: "DeadlineExceeded"}

	errUnavailable = status.Error(codes.Unavailable, "no leader")
	errWrongStatus = status.Error(codes.FailedPrecondition, "nimbus: action not allowed in the topology's status: a is KILLED")
)

func saw(o obs) opOutput               { return opOutput{obs: o} }
func refused(c codes.Code) opOutput    { return classify(status.Error(c, c.String())) }
func op(k opKind, name string) opInput { return opInput{kind: k, name: name} }
func listed(m map[string]obs) opOutput { return opOutput{list: m} }
func rebalanceTo(name string, n int32) opInput {
	return opInput{kind: opRebalance, name: name, workers: n}
}

func TestModel(t *testing.T) {
	const end = 1000 // an unknown outcome's return: the end of the history
	for _, tc := range []struct {
		name string
		// want under the model whose reads may lag, and with linearizable
		// reads
		lagging, strict porcupine.CheckResult
		ops             []porcupine.Operation
	}{{
		name:    "an acknowledged submit, then a read that sees it",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(1, op(opStatus, "a"), 20, 30, saw(obsActive)),
		},
	}, {
		name:    "a read after an acknowledged submit that does not see it",
		lagging: porcupine.Ok, strict: porcupine.Illegal, // a lagging cache may not have it yet
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(1, op(opStatus, "a"), 20, 30, saw(obsAbsent)),
		},
	}, {
		name:    "a read that sees a topology before anyone submitted it",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(1, op(opStatus, "a"), 0, 10, saw(obsActive)),
			hop(0, op(opSubmit, "a"), 20, 30, acked),
		},
	}, {
		name:    "a read concurrent with the submit may see it or not",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 30, acked),
			hop(1, op(opStatus, "a"), 5, 10, saw(obsActive)),
			hop(2, op(opList, ""), 6, 12, listed(map[string]obs{})),
		},
	}, {
		name:    "a kill is never undone: activate after an acknowledged kill succeeds",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opKill, "a"), 20, 30, acked),
			hop(0, op(opActivate, "a"), 40, 50, acked),
		},
	}, {
		name:    "a kill is never undone: a read shows it ACTIVE again after KILLED was seen",
		lagging: porcupine.Ok, strict: porcupine.Illegal, // the lagging read is from an older cache
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opKill, "a"), 20, 30, acked),
			hop(1, op(opStatus, "a"), 40, 50, saw(obsKilled)),
			hop(1, op(opStatus, "a"), 60, 70, saw(obsActive)),
		},
	}, {
		name:    "a killed topology is KILLED, then gone; activate is refused either way",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opKill, "a"), 20, 30, acked),
			hop(1, op(opStatus, "a"), 40, 50, saw(obsKilled)),
			hop(0, op(opActivate, "a"), 55, 58, refused(codes.FailedPrecondition)),
			hop(1, op(opList, ""), 60, 70, listed(map[string]obs{})),
			hop(0, op(opActivate, "a"), 80, 90, refused(codes.NotFound)),
		},
	}, {
		name:    "status changes apply in order",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opDeactivate, "a"), 20, 30, acked),
			hop(1, op(opStatus, "a"), 40, 50, saw(obsInactive)),
			hop(0, op(opActivate, "a"), 60, 70, acked),
			hop(1, op(opList, ""), 80, 90, listed(map[string]obs{"a": obsActive})),
		},
	}, {
		name:    "a status the topology never had",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(1, op(opList, ""), 20, 30, listed(map[string]obs{"a": obsInactive})),
		},
	}, {
		name:    "activate refused as if rebalancing when nothing rebalanced",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opActivate, "a"), 20, 30, refused(codes.FailedPrecondition)),
		},
	}, {
		name:    "a rebalance returns to the previous status; another plan meanwhile is refused",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opDeactivate, "a"), 20, 30, acked),
			hop(0, rebalanceTo("a", 2), 40, 50, acked),
			hop(0, rebalanceTo("a", 1), 52, 54, refused(codes.FailedPrecondition)),
			hop(0, rebalanceTo("a", 2), 56, 58, acked), // the same plan: a no-op
			hop(1, op(opStatus, "a"), 60, 70, saw(obsRebalancing)),
			hop(1, op(opStatus, "a"), 80, 90, saw(obsInactive)),
		},
	}, {
		name:    "a rebalance does not return to a status the topology did not have",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, rebalanceTo("a", 2), 40, 50, acked),
			hop(1, op(opStatus, "a"), 80, 90, saw(obsInactive)),
		},
	}, {
		name:    "an unknown outcome may apply late",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(2, op(opDeactivate, "a"), 20, end, timedOut), // timed out at 25
			hop(0, op(opActivate, "a"), 30, 40, acked),
			hop(1, op(opStatus, "a"), 50, 60, saw(obsInactive)), // applied after the activate
		},
	}, {
		name:    "an unknown outcome may never apply",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opKill, "a"), 20, end, timedOut),
			hop(1, op(opStatus, "a"), 50, 60, saw(obsActive)),
			hop(0, op(opDeactivate, "a"), 70, 80, acked),
		},
	}, {
		name:    "an unknown submit may have committed; a refused one did not",
		lagging: porcupine.Ok, strict: porcupine.Ok,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, end, timedOut),
			hop(1, op(opStatus, "a"), 50, 60, saw(obsActive)),
			hop(0, op(opSubmit, "b"), 0, 10, refused(codes.Aborted)),
			hop(1, op(opStatus, "b"), 50, 60, saw(obsAbsent)),
		},
	}, {
		name:    "an ABORTED submit that shows up committed",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "b"), 0, 10, refused(codes.Aborted)),
			hop(1, op(opStatus, "b"), 50, 60, saw(obsActive)),
		},
	}, {
		name:    "a list is checked topology by topology",
		lagging: porcupine.Illegal, strict: porcupine.Illegal,
		ops: []porcupine.Operation{
			hop(0, op(opSubmit, "a"), 0, 10, acked),
			hop(0, op(opSubmit, "b"), 0, 10, acked),
			hop(0, op(opKill, "b"), 20, 30, acked),
			// b shown ACTIVE is a lagging read; a shown KILLED is not.
			hop(1, op(opList, ""), 40, 50, listed(map[string]obs{"a": obsKilled, "b": obsActive})),
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range []struct {
				readsMayLag bool
				want        porcupine.CheckResult
			}{{true, tc.lagging}, {false, tc.strict}} {
				got, _ := porcupine.CheckOperationsVerbose(topologyModel(m.readsMayLag), tc.ops, 10*time.Second)
				if got != m.want {
					t.Errorf("reads may lag %v: %s, want %s", m.readsMayLag, got, m.want)
				}
			}
		})
	}
}

// TestHistoryUnknown: history.write records an unknown outcome as
// returning at the end of the history, and a refusal through the SDK with
// the possible effect of an earlier attempt.
func TestHistoryUnknown(t *testing.T) {
	h := newHistory()
	h.write(clientWorkload, op(opSubmit, "a"), h.now(), nil, true)
	h.write(clientWorkload, op(opKill, "a"), h.now(), errUnavailable, true)
	h.write(clientWorkload, op(opActivate, "a"), h.now(), errWrongStatus, true)
	ops, unknown := h.operations()
	if len(ops) != 4 || unknown != 2 {
		t.Fatalf("%d operations, %d unknown; want 4, 2: %+v", len(ops), unknown, ops)
	}
	end := int64(0)
	for _, op := range ops {
		if op.Output.(opOutput).res != resUnknown && op.Output.(opOutput).res != resMaybe {
			end = max(end, op.Return)
		}
	}
	for _, op := range ops {
		if r := op.Output.(opOutput).res; (r == resUnknown || r == resMaybe) && op.Return <= end {
			t.Errorf("%s returns at %d, before the end %d", describeOp(op.Input, op.Output), op.Return, end)
		}
	}
	if got := porcupine.CheckOperations(topologyModel(true), ops); !got {
		t.Errorf("not linearizable: %+v", ops)
	}
}

// Leaving repeated reads out of a partition (collapser) never changes the
// check's answer: random small histories, checked with and without
// collapsing. Each is made by running the model (apply) at a random moment
// of every operation: two writers, one reader, writes whose outcome stays
// unknown (applied or not); then some reads are made to see something
// else, so that both answers come up.
func TestCollapseKeepsTheAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b"}
	writes := []opKind{opSubmit, opSubmit, opKill, opActivate, opDeactivate, opRebalance}
	answers := map[porcupine.CheckResult]int{}
	for i := range 400 {
		ops, at := randomHistory(rng, names, writes)
		// Run the model at each operation's moment, in their order.
		order := make([]int, len(ops))
		for j := range order {
			order[j] = j
		}
		slices.SortFunc(order, func(x, y int) int { return cmp.Compare(at[x], at[y]) })
		state := map[string]tState{}
		for _, n := range names {
			state[n] = tState{seen: 1 << obsAbsent}
		}
		for _, j := range order {
			in := ops[j].Input.(opInput)
			switch {
			case in.kind == opStatus:
				ops[j].Output = saw(state[in.name].st.obs())
			case in.kind == opList:
				seen := map[string]obs{}
				for _, n := range names {
					if o := state[n].st.obs(); o != obsAbsent {
						seen[n] = o
					}
				}
				ops[j].Output = listed(seen)
			default:
				next, ok := apply(state[in.name], in)
				unknown := ops[j].Output.(opOutput).res == resUnknown
				if ok && (!unknown || rng.IntN(2) == 0) {
					state[in.name] = next
				}
				if !ok && !unknown {
					ops[j].Output = refused(codes.Unavailable) // blind: explains itself
				}
			}
			if in.kind.read() && rng.IntN(8) == 0 { // a read that saw something else
				o := obs(rng.IntN(int(obsKilled) + 1))
				if in.kind == opStatus {
					ops[j].Output = saw(o)
				} else {
					ops[j].Output = listed(map[string]obs{names[rng.IntN(len(names))]: o})
				}
			}
		}
		for _, lag := range []bool{true, false} {
			whole := topologyModel(lag)
			whole.Partition = func(h []porcupine.Operation) [][]porcupine.Operation { return partition(h, false) }
			want := porcupine.CheckOperationsTimeout(whole, ops, 10*time.Second)
			got := porcupine.CheckOperationsTimeout(topologyModel(lag), ops, 10*time.Second)
			if got != want {
				t.Fatalf("history %d (reads may lag: %v): %s with reads left out, %s with all:\n%v", i, lag, got, want, ops)
			}
			answers[want]++
		}
	}
	if answers[porcupine.Ok] < 100 || answers[porcupine.Illegal] < 100 {
		t.Fatalf("answers %v: the random histories test too little", answers)
	}
}

// randomHistory makes the operations of TestCollapseKeepsTheAnswer, their
// outputs to be filled in, and the moment each takes effect.
func randomHistory(rng *rand.Rand, names []string, writes []opKind) ([]porcupine.Operation, []int64) {
	var ops []porcupine.Operation
	var at []int64
	for w := range 2 { // two writers, each one call at a time
		t := int64(rng.IntN(20))
		for range 3 + rng.IntN(4) {
			in := op(writes[rng.IntN(len(writes))], names[rng.IntN(len(names))])
			if in.kind == opRebalance {
				in.workers = int32(1 + rng.IntN(2))
			}
			ret, out := t+int64(2+rng.IntN(30)), acked
			at = append(at, t+rng.Int64N(ret-t))
			if rng.IntN(6) == 0 {
				ret, out = 10_000, timedOut // never answered
			}
			ops = append(ops, hop(w, in, t, ret, out))
			t = min(ret, t+40) + int64(rng.IntN(10))
		}
	}
	t := int64(0)
	for range 10 + rng.IntN(25) { // one reader, one read at a time
		ret := t + int64(1+rng.IntN(8))
		in := op(opList, "")
		if rng.IntN(3) == 0 {
			in = op(opStatus, names[rng.IntN(len(names))])
		}
		ops = append(ops, hop(9, in, t, ret, opOutput{}))
		at = append(at, t+rng.Int64N(ret-t))
		t = ret + int64(rng.IntN(6))
	}
	return ops, at
}

// A long run's history, a whole list read thousands of times while
// thousands of topologies come and go, is checked in partitions that grow
// with what happened to each topology, not with the run.
func TestPartitionOfALongRunStaysSmall(t *testing.T) {
	const topologies, lists = 1000, 4000
	var ops []porcupine.Operation
	at := int64(0)
	live := map[string]obs{}
	next := 0
	for i := range lists {
		if i%4 == 0 && next < topologies { // a submit, and a kill of an older one
			n := fmt.Sprintf("w%d", next)
			next++
			ops = append(ops, hop(clientWorkload, op(opSubmit, n), at, at+3, acked))
			live[n] = obsActive
			if next > 10 {
				old := fmt.Sprintf("w%d", next-10)
				ops = append(ops, hop(clientWorkload, op(opKill, old), at+4, at+6, acked))
				delete(live, old) // removed at once, as the leader may
			}
			at += 7
		}
		ops = append(ops, hop(clientReader, op(opList, ""), at, at+2, listed(maps.Clone(live))))
		at += 3
	}
	own := len(ops) - lists
	parts := partitionByName(ops)
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if len(parts) != topologies || total > 4*own {
		t.Fatalf("%d partitions of %d operations in all, for %d topologies and %d writes: the list reads were not left out",
			len(parts), total, topologies, own)
	}
	if got := porcupine.CheckOperationsTimeout(topologyModel(false), ops, 30*time.Second); got != porcupine.Ok {
		t.Fatalf("a linearizable history checked %s", got)
	}
	// A list that shows a topology after its kill was acknowledged and it
	// was removed is still caught.
	ops = append(ops, hop(clientReader, op(opList, ""), at+10, at+12, listed(map[string]obs{"w0": obsActive})))
	if got := porcupine.CheckOperationsTimeout(topologyModel(false), ops, 30*time.Second); got != porcupine.Illegal {
		t.Fatalf("a killed topology listed ACTIVE again checked %s", got)
	}
}
