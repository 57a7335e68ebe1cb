package leader

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/cluster"
)

// ErrFenced is returned by Term.Multi when the term's lock node is gone:
// this nimbus no longer leads, and nothing was written.
var ErrFenced = apierr.Sentinel("leader: write fenced: this nimbus no longer leads", apierr.ErrUnavailable)

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
// means no leader). It increases strictly from one leader to the next. A
// term that resumes after a brief disconnection keeps its epoch.
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
func (t *Term) Multi(ops ...cluster.Op) ([]zk.MultiResponse, error) {
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

// MultiCtx is Multi for a write made on behalf of a request: it is bounded
// by ctx's deadline (cluster.CallWrite). It fails fast with
// cluster.ErrUnavailable, nothing sent, without a session or while
// ZooKeeper is slow; and with cluster.ErrOutcomeUnknown when ZooKeeper does
// not answer in time, since the write may still apply. A fence found even
// after the answer was abandoned still ends the term.
func (t *Term) MultiCtx(ctx context.Context, ops ...cluster.Op) ([]zk.MultiResponse, error) {
	if t.ctx.Err() != nil {
		return nil, fmt.Errorf("%w (epoch %d ended)", ErrFenced, t.epoch)
	}
	res, err := cluster.CallWrite(ctx, t.sess, "fenced write", func(conn *zk.Conn) ([]zk.MultiResponse, error) {
		res, err := fencedMulti(conn, t.node, ops...)
		if errors.Is(err, ErrFenced) {
			t.cancel()
		}
		return res, err
	})
	if errors.Is(err, ErrFenced) {
		return nil, fmt.Errorf("%w (epoch %d)", err, t.epoch)
	}
	return res, err
}

// fencedMulti applies ops only if the lock node exists. Version -1 checks
// existence only: the node's version is not ours to guard, and its
// existence alone proves that the session that won the lock is alive and
// still first in the queue (lower nodes can never reappear).
func fencedMulti(conn *zk.Conn, lockNode string, ops ...cluster.Op) ([]zk.MultiResponse, error) {
	all := make([]any, 0, len(ops)+1)
	all = append(all, &zk.CheckVersionRequest{Path: lockNode, Version: cluster.AnyVersion})
	for _, op := range ops {
		all = append(all, op.Request())
	}
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

// lead runs one term on node, watched through ownWatch (armed here if
// nil), if the Eligible gate lets it. It returns when the term ends: ctx
// ends, the session leaves the connected state or changes, the node is
// deleted, this nimbus leaves the queue, or a write was fenced. It returns
// the watch on node if that is still armed, so reconnections don't pile
// watches up.
func (e *Election) lead(ctx context.Context, node string, epoch, sid int64, ownWatch <-chan zk.Event) <-chan zk.Event {
	if !e.eligible(epoch) {
		return ownWatch
	}
	conn := e.cfg.Session.Conn()
	if ownWatch == nil {
		_, _, w, err := conn.GetW(node)
		if err != nil {
			return nil
		}
		ownWatch = w
	}
	tctx, cancel := context.WithCancel(ctx)
	t := &Term{ctx: tctx, cancel: cancel, sess: e.cfg.Session, node: node, epoch: epoch, began: time.Now()}
	e.update(func() { e.current = t })
	e.log.Info("leading", "epoch", epoch, "node", path.Base(node))

	var reason string
	reason, ownWatch = e.holdTerm(ctx, t, sid, ownWatch)
	cancel()
	e.update(func() { e.current = nil })
	e.log.Info("leadership ended", "epoch", epoch, "reason", reason)
	return ownWatch
}

// eligible asks the gate whether this nimbus may lead the term it won. If
// not, it takes this nimbus out of the queue, unless a Queue call came
// after the check: the caller gives the lock back.
func (e *Election) eligible(epoch int64) bool {
	if e.cfg.Eligible == nil {
		return true
	}
	gen := e.queueGeneration()
	err := e.cfg.Eligible()
	if err == nil {
		return true
	}
	e.log.Warn("won the leader lock but may not lead; giving it back", "err", err, "epoch", epoch)
	e.update(func() {
		if e.queueGen == gen {
			e.queued = false
		}
	})
	return false
}

// holdTerm waits until term t, on session sid, must end, and says why.
func (e *Election) holdTerm(ctx context.Context, t *Term, sid int64, ownWatch <-chan zk.Event) (string, <-chan zk.Event) {
	for {
		queued, h, wake := e.wanted()
		state, id, sessChanged := e.cfg.Session.State()
		switch {
		case h != nil && h.node == t.node:
			return "handing over", ownWatch
		case !queued:
			return "left the queue", ownWatch
		case state != zk.StateHasSession:
			return "session " + state.String(), ownWatch
		case id != sid:
			return "session expired", ownWatch
		}
		select {
		case <-ctx.Done():
			return "stopping", ownWatch
		case <-t.ctx.Done():
			return "a write was fenced", ownWatch
		case ev := <-ownWatch:
			if ev.Type == zk.EventNodeDeleted {
				// Alive, yet deposed: a follower took this nimbus for
				// dead (package depose), or an operator deleted the
				// node. The fence refuses every write from here on.
				return "deposed: lock node deleted while leading", nil
			}
			// Data changed or the watch was dropped: re-arm.
			_, _, w, err := e.cfg.Session.Conn().GetW(t.node)
			if err != nil {
				return "lock node lost", nil
			}
			ownWatch = w
		case <-wake:
		case <-sessChanged:
		}
	}
}
