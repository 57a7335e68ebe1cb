package chaos_test

import (
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
