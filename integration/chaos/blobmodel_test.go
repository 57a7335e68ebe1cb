package chaos_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
)

// The blob API as a sequential specification, for Porcupine: one register
// per key, partitioned by key. A write carries a value no other write has
// (the content is "<key>:<value>"); a read, from the leader, returns the
// value of its moment, or NotFound.
//
//	create v   absent  -> v          present: AlreadyExists
//	update v   present -> v          absent: NotFound
//	delete     present -> absent     absent: NotFound
//	read       returns the value, or absent (NotFound)
//
// An acknowledged write applies once between its call and its answer, so a
// read after an acknowledged update returns it or a later write's value:
// no update is undone. A write of unknown outcome may apply at any moment
// after its call; a blind refusal (NOT_LEADER, ABORTED, INVALID_ARGUMENT)
// changed nothing.

// blobOpKind is an operation of the blob API.
type blobOpKind uint8

const (
	blobCreate blobOpKind = iota
	blobUpdate
	blobDelete
	blobRead
)

func (k blobOpKind) String() string {
	return [...]string{"create", "update", "delete", "read"}[k]
}

// blobInput is a blob operation's input.
type blobInput struct {
	kind  blobOpKind
	key   string
	value int // a write's value
}

// blobOutput is its outcome: a write's (opOutput's res, code, blind, why)
// or a read's value (0: absent).
type blobOutput struct {
	write opOutput
	value int
}

// blobState is one key's register: 0 is absent.
type blobState int

// blobModel is the model; see the comment at the top of this file.
func blobModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			for _, op := range history {
				k := op.Input.(blobInput).key
				byKey[k] = append(byKey[k], op)
			}
			var out [][]porcupine.Operation
			for _, k := range slices.Sorted(maps.Keys(byKey)) {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() []any { return []any{blobState(0)} },
		Step: func(state, input, output any) []any {
			return blobStep(state.(blobState), input.(blobInput), output.(blobOutput))
		},
		DescribeOperation: describeBlobOp,
		DescribeState: func(state any) string {
			if state.(blobState) == 0 {
				return "absent"
			}
			return fmt.Sprintf("value %d", state.(blobState))
		},
	}
	return nm.ToModel()
}

// blobStep returns every state the key may be in after the operation, none
// if it cannot have answered so.
func blobStep(s blobState, in blobInput, out blobOutput) []any {
	if in.kind == blobRead {
		if int(s) == out.value {
			return []any{s}
		}
		return nil
	}
	applied, ok := blobApply(s, in)
	switch out.write.res {
	case resOK:
		if ok {
			return []any{applied}
		}
		return nil
	case resUnknown, resMaybe:
		if ok && applied != s {
			return []any{s, applied}
		}
		return []any{s}
	}
	// Refused: blind, or an answer the state explains.
	switch {
	case out.write.blind:
		return []any{s}
	case out.write.code == codes.NotFound && s == 0 && in.kind != blobCreate:
		return []any{s}
	case out.write.code == codes.AlreadyExists && s != 0 && in.kind == blobCreate:
		return []any{s}
	}
	return nil
}

// blobApply is the write's effect on s, or false if s makes the leader
// refuse it.
func blobApply(s blobState, in blobInput) (blobState, bool) {
	switch in.kind {
	case blobCreate:
		return blobState(in.value), s == 0
	case blobUpdate:
		return blobState(in.value), s != 0
	case blobDelete:
		return 0, s != 0
	}
	return s, false
}

func describeBlobOp(input, output any) string {
	in, out := input.(blobInput), output.(blobOutput)
	if in.kind == blobRead {
		if out.value == 0 {
			return fmt.Sprintf("read(%s) -> absent", in.key)
		}
		return fmt.Sprintf("read(%s) -> %d", in.key, out.value)
	}
	call := fmt.Sprintf("%s(%s, %d)", in.kind, in.key, in.value)
	if in.kind == blobDelete {
		call = fmt.Sprintf("delete(%s)", in.key)
	}
	switch out.write.res {
	case resRejected:
		return fmt.Sprintf("%s -> %s: %s", call, out.write.code, out.write.why)
	case resUnknown:
		return fmt.Sprintf("%s -> outcome unknown: %s", call, out.write.why)
	case resMaybe:
		return call + ", an earlier attempt's effect, if any"
	}
	return call + " -> ok"
}
