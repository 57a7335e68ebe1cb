package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
)

// blobKeys are the keys the blob workload writes: few, so that creates,
// updates and deletes of one key interleave.
var blobKeys = []string{"chaos-a", "chaos-b", "chaos-c"}

// blobHistory is every blob operation of a run, as Porcupine checks it
// (blobmodel_test.go), on the run's history clock.
type blobHistory struct {
	mu   sync.Mutex
	ops  []porcupine.Operation
	next int // the last value written
}

func (h *blobHistory) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// blobWorkload creates, updates, deletes and reads blobs through the SDK
// every 300 to 900 ms until ctx ends; a read goes to the leader, so it
// returns the value of its moment.
func (r *run) blobWorkload(ctx context.Context, rng *rand.Rand) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(300+rng.IntN(600)) * time.Millisecond):
		}
		key := blobKeys[rng.IntN(len(blobKeys))]
		kind := []blobOpKind{blobCreate, blobUpdate, blobUpdate, blobDelete, blobRead, blobRead}[rng.IntN(6)]
		if err := r.blobOp(ctx, kind, key); err != nil && ctx.Err() == nil {
			r.t.Logf("chaos: client blob %s %s: %v", kind, key, err)
		}
	}
}

// blobOp makes one blob operation and records it.
func (r *run) blobOp(ctx context.Context, kind blobOpKind, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h := r.blobs
	in := blobInput{kind: kind, key: key}
	if kind == blobCreate || kind == blobUpdate {
		h.mu.Lock()
		h.next++
		in.value = h.next
		h.mu.Unlock()
	}
	content := []byte(fmt.Sprintf("%s:%d", key, in.value))
	two := int32(2)
	call := r.hist.now()
	var err error
	switch kind {
	case blobCreate:
		_, err = r.client.CreateBlob(ctx, key, bytes.NewReader(content), client.BlobOptions{Size: int64(len(content)), ReplicationFactor: &two})
	case blobUpdate:
		_, err = r.client.UpdateBlob(ctx, key, bytes.NewReader(content), client.BlobOptions{Size: int64(len(content))})
	case blobDelete:
		err = r.client.DeleteBlob(ctx, key)
	case blobRead:
		var buf bytes.Buffer
		_, err = r.client.ReadBlob(ctx, key, &buf)
		r.recordBlobRead(in, call, buf.Bytes(), err)
		if status.Code(err) == codes.NotFound {
			err = nil
		}
		r.tally(ctx, "blob-read", err)
		return err
	}
	ret := r.hist.now()
	out := classify(err)
	if out.res == resUnknown {
		ret = pending
	}
	if out.res == resRejected && kind != blobCreate {
		// The SDK retried: an earlier attempt may have applied.
		h.add(porcupine.Operation{ClientId: clientEarlier, Input: in, Call: call, Output: blobOutput{write: opOutput{res: resMaybe}}, Return: pending})
	}
	h.add(porcupine.Operation{ClientId: clientWorkload, Input: in, Call: call, Output: blobOutput{write: out}, Return: ret})
	if c := status.Code(err); c == codes.NotFound || c == codes.AlreadyExists {
		err = nil // an answer the model explains: the key's state
	}
	r.tally(ctx, "blob-"+kind.String(), err)
	return err
}

// recordBlobRead records a read that answered: the value its content
// names, or absent. One that failed otherwise saw nothing.
func (r *run) recordBlobRead(in blobInput, call int64, content []byte, err error) {
	ret := r.hist.now()
	var value int
	switch {
	case err == nil:
		v, ok := strings.CutPrefix(string(content), in.key+":")
		n, perr := strconv.Atoi(v)
		if !ok || perr != nil || n <= 0 {
			r.violation("blob %s read back %q, which no write wrote", in.key, content)
			return
		}
		value = n
	case status.Code(err) == codes.NotFound:
	default:
		return
	}
	r.blobs.add(porcupine.Operation{ClientId: clientReader, Input: in, Call: call, Output: blobOutput{value: value}, Return: ret})
}

// checkBlobHistory checks the blob operations with Porcupine: a read from
// the leader returns the value of its moment, and no acknowledged write is
// undone.
func (r *run) checkBlobHistory() {
	r.blobs.mu.Lock()
	ops, _ := resolvePending(r.blobs.ops)
	r.blobs.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(blobModel(), ops, checkTimeout)
	r.t.Logf("chaos: blob linearizability: %d operations: %s", len(ops), res)
	switch res {
	case porcupine.Illegal:
		path := r.saveVisualization("blobs-linearizability.html", blobModel(), info, true)
		r.violation("the blob history is not linearizable (Porcupine): a read missed an acknowledged write, or one was undone; see %s", path)
	case porcupine.Unknown:
		r.t.Errorf("chaos: the blob history's check timed out after %s", checkTimeout)
	}
}
