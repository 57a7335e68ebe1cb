package chaos_test

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
)

// The blob model, without a cluster: what it accepts and what it finds
// illegal.
func TestBlobModel(t *testing.T) {
	ok := blobOutput{write: opOutput{res: resOK}}
	unknown := blobOutput{write: opOutput{res: resUnknown}}
	notFound := blobOutput{write: opOutput{res: resRejected, code: codes.NotFound}}
	exists := blobOutput{write: opOutput{res: resRejected, code: codes.AlreadyExists}}
	read := func(v int) blobOutput { return blobOutput{value: v} }
	op := func(kind blobOpKind, value int, out blobOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: blobInput{kind: kind, key: "k", value: value}, Output: out, Call: call, Return: ret}
	}
	for _, c := range []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"create, update, read the update", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobUpdate, 2, ok, 2, 3), op(blobRead, 0, read(2), 4, 5)}, true},
		{"an acknowledged update undone", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobUpdate, 2, ok, 2, 3), op(blobRead, 0, read(1), 4, 5)}, false},
		{"a read concurrent with the update sees either", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobUpdate, 2, ok, 2, 5), op(blobRead, 0, read(1), 3, 4)}, true},
		{"an update of unknown outcome, seen later", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobUpdate, 2, unknown, 2, 100), op(blobRead, 0, read(2), 4, 5), op(blobRead, 0, read(2), 6, 7)}, true},
		{"an update of unknown outcome seen, then not", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobUpdate, 2, unknown, 2, 100), op(blobRead, 0, read(2), 4, 5), op(blobRead, 0, read(1), 6, 7)}, false},
		{"a deleted blob read back", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobDelete, 0, ok, 2, 3), op(blobRead, 0, read(1), 4, 5)}, false},
		{"update of a missing blob: NotFound", []porcupine.Operation{
			op(blobUpdate, 1, notFound, 0, 1), op(blobCreate, 2, ok, 2, 3), op(blobCreate, 3, exists, 4, 5)}, true},
		{"NotFound for a blob that exists", []porcupine.Operation{
			op(blobCreate, 1, ok, 0, 1), op(blobUpdate, 2, notFound, 2, 3)}, false},
	} {
		if got := porcupine.CheckOperations(blobModel(), c.ops); got != c.legal {
			t.Errorf("%s: linearizable %v, want %v", c.name, got, c.legal)
		}
	}
}
