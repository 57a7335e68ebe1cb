package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
)

// ErrFenced is returned by Term.Multi when the term's lock node is gone:
// this nimbus no longer leads, and nothing was written.
var ErrFenced = errors.New("leader: write fenced: this nimbus no longer leads")

// Term is one stretch of leadership.
type Term struct {
	ctx    context.Context
	cancel context.CancelFunc
	sess   *cluster.Session
	node   string // full path of this term's lock node
	epoch  int64
	began  time.Time
}

// Context is cancelled when the term ends. Leader-only work runs under it.
func (t *Term) Context() context.Context { return t.ctx }

// Done is closed when the term ends.
func (t *Term) Done() <-chan struct{} { return t.ctx.Done() }

// Epoch is the sequence number of the term's lock node plus one (zero
// means no leader). It increases strictly from one leader to the next. A term that resumes after a brief
// disconnection keeps its epoch.
func (t *Term) Epoch() int64 { return t.epoch }

// Began is when this nimbus took the lead: the lock won, the code checked.
func (t *Term) Began() time.Time { return t.began }

// Node is the path of the term's lock node.
func (t *Term) Node() string { return t.node }

// Multi applies ops atomically while the term lasts. It fails with
// ErrFenced, writing nothing, when the term has ended, and when ZooKeeper
// finds the term's lock node gone: its first operation is a check on that
// node, so a deposed leader is stopped by ZooKeeper itself, whatever this
// process believes (say it was paused and has not yet seen its session
// expire). A fenced write ends the term at once.
func (t *Term) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if t.ctx.Err() != nil {
		return nil, fmt.Errorf("%w (epoch %d ended)", ErrFenced, t.epoch)
	}
	res, err := fencedMulti(t.sess.Conn(), t.node, ops...)
	if errors.Is(err, ErrFenced) {
		t.cancel()
		return nil, fmt.Errorf("%w (epoch %d)", err, t.epoch)
	}
	return res, err
}

// fencedMulti applies ops only if the lock node exists. Version -1 checks
// existence only: the node's version is not ours to guard, and its
// existence alone proves that the session that won the lock is alive and
// still first in the queue (lower nodes can never reappear).
func fencedMulti(conn *zk.Conn, lockNode string, ops ...any) ([]zk.MultiResponse, error) {
	all := make([]any, 0, len(ops)+1)
	all = append(all, &zk.CheckVersionRequest{Path: lockNode, Version: -1})
	all = append(all, ops...)
	res, err := conn.Multi(all...)
	if len(res) > 0 && res[0].Error != nil {
		if errors.Is(res[0].Error, zk.ErrNoNode) {
			return nil, ErrFenced
		}
		return nil, fmt.Errorf("leader: fence check: %w", res[0].Error)
	}
	if err != nil {
		return res, fmt.Errorf("leader: fenced write: %w", firstOpError(res, err))
	}
	return res[1:], nil
}

// firstOpError names the operation that failed a multi: ZooKeeper marks
// the ops before it OK and those after it as not run.
func firstOpError(res []zk.MultiResponse, err error) error {
	for i, r := range res {
		if r.Error != nil {
			return fmt.Errorf("op %d: %w", i-1, r.Error) // op 0 is the fence
		}
	}
	return err
}
