package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/notify"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Config configures an Election.
type Config struct {
	Session *cluster.Session
	// Self is written into the lock node: host and port only.
	Self *clusterv1.NimbusInfo
	// Eligible is asked when this nimbus wins the lock. An error gives the
	// lock back and takes this nimbus out of the queue until Queue is
	// called again: the gate for "holds the code of every topology"
	// (invariant 6). Nil means always eligible.
	Eligible func() error
	Logger   *slog.Logger
}

// Election is this nimbus's place in the leader-lock queue. New starts
// nothing; Run takes part until its context ends, while Queue and Leave
// say whether to take part.
type Election struct {
	cfg     Config
	log     *slog.Logger
	changes notify.Notifier // any of the fields below changed

	mu       sync.Mutex
	queued   bool      // whether to be in the queue
	queueGen uint64    // counts Queue calls
	node     string    // the lock node this process holds, if any
	handover *handover // a hand-over asked for and not yet done; nil for none
	current  *Term
}

// New returns an election that is not yet queued.
func New(cfg Config) *Election {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Election{cfg: cfg, log: cfg.Logger.With("component", "leader")}
}

// Queue puts this nimbus in the leader-lock queue (a no-op if it is in
// already). It does not block.
func (e *Election) Queue() {
	e.update(func() {
		e.queued = true
		e.queueGen++
	})
}

// Withdraw takes this nimbus out of the queue without waiting: the current
// term, if any, ends and the lock node is deleted as soon as ZooKeeper
// answers.
func (e *Election) Withdraw() { e.update(func() { e.queued = false }) }

// Queued reports whether this nimbus means to be in the queue.
func (e *Election) Queued() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queued
}

// Leave is Withdraw, then waits until the lock node is deleted, so the
// next candidate leads without waiting for a session timeout; or until ctx
// ends (while ZooKeeper is unreachable the node goes with the session).
func (e *Election) Leave(ctx context.Context) error {
	e.Withdraw()
	for {
		changed := e.Changed()
		e.mu.Lock()
		node := e.node
		e.mu.Unlock()
		if node == "" {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("leader: leave: lock node %s not yet deleted: %w", node, ctx.Err())
		}
	}
}

// StepDown hands leadership over on purpose, and queues this nimbus again
// at the back. next is the lock node (its name under /leader-lock) that is
// to lead, or "" for whoever is next in the queue. In one ZooKeeper write
// it deletes this nimbus's lock node and every node queued between it and
// next: those nimbuses join again behind, and next leads within one
// ZooKeeper notification. The term ends before the write. It returns once
// the write is done, or fails, or when ctx ends. Nothing is done, with
// ErrNotLeading, when this nimbus does not lead, and with
// ErrHandOverUnderWay during another hand-over; with ErrNextNotQueued nothing
// is deleted and this nimbus leads again; with ErrNodeGone its node went
// first and whoever was next leads.
func (e *Election) StepDown(ctx context.Context, next string) error {
	return e.handOver(ctx, next, true)
}

// LeaveFor is StepDown for a leader that stops: it leaves the queue
// instead of joining it again.
func (e *Election) LeaveFor(ctx context.Context, next string) error {
	return e.handOver(ctx, next, false)
}

// handover is a hand-over asked of the candidate: from node, to next.
type handover struct {
	node, next string
	done       bool
	err        error
}

// Errors of StepDown and LeaveFor.
var (
	// ErrNotLeading: asked of a nimbus that does not lead; nothing done.
	ErrNotLeading = errors.New("leader: hand over: this nimbus does not lead")
	// ErrHandOverUnderWay: another hand-over is under way; nothing done.
	ErrHandOverUnderWay = errors.New("leader: hand over: another hand-over is under way")
	// ErrNextNotQueued: the nimbus to lead next is not queued behind this
	// one; nothing deleted, and this nimbus leads again.
	ErrNextNotQueued = errors.New("leader: hand over: the next is not queued behind this nimbus")
	// ErrNodeGone: this nimbus's lock node went before the hand-over's
	// write answered (its session expired, the answer was lost): the term
	// ended, but who leads next was not this hand-over's choice.
	ErrNodeGone = errors.New("leader: hand over: this nimbus's lock node went first")
)

func (e *Election) handOver(ctx context.Context, next string, requeue bool) error {
	h := &handover{next: next}
	e.update(func() {
		switch {
		case e.current == nil || e.current.ctx.Err() != nil:
			h.done, h.err = true, ErrNotLeading
			return
		case e.handover != nil:
			h.done, h.err = true, ErrHandOverUnderWay
			return
		}
		h.node = e.current.node
		e.handover = h
		if !requeue {
			e.queued = false
		}
	})
	for {
		changed := e.Changed()
		e.mu.Lock()
		done, err := h.done, h.err
		e.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("leader: hand over: lock node %s not yet deleted: %w", h.node, ctx.Err())
		}
	}
}

// finish records the end of a hand-over.
func (e *Election) finish(h *handover, err error) {
	e.update(func() {
		h.done, h.err = true, err
		if e.handover == h {
			e.handover = nil
		}
	})
}

// Current returns the live term, or nil when this nimbus does not lead.
// A term can end at any moment after it is returned: work under its
// context, write through its Multi.
func (e *Election) Current() *Term {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil && e.current.ctx.Err() == nil {
		return e.current
	}
	return nil
}

// Changed returns a channel closed at the next change of queue membership,
// lock node or term.
func (e *Election) Changed() <-chan struct{} { return e.changes.Changed() }

// Await blocks until this nimbus leads, and returns the term; or until ctx
// ends. Callers wait for the term to end before awaiting the next one.
func (e *Election) Await(ctx context.Context) (*Term, error) {
	for {
		changed := e.Changed() // before Current: no change goes unseen
		if t := e.Current(); t != nil {
			return t, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// update changes the election's state under its lock, then announces it.
func (e *Election) update(f func()) {
	e.mu.Lock()
	f()
	e.mu.Unlock()
	e.changes.Notify()
}

// wanted reports whether this nimbus means to be queued, and the
// hand-over asked for if any, with the channel that announces the next
// change, taken first: no change goes unseen.
func (e *Election) wanted() (queued bool, h *handover, changed <-chan struct{}) {
	changed = e.Changed()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queued, e.handover, changed
}

// queueGeneration counts Queue calls, so that a gate can tell one made
// after it looked.
func (e *Election) queueGeneration() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queueGen
}
