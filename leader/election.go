package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// retryDelay paces retries after ZooKeeper errors that no watch or session
// change will announce.
const retryDelay = 250 * time.Millisecond

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
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	queued  bool   // whether to be in the queue
	node    string // the lock node this process holds, if any
	current *Term
	changed chan struct{} // closed when any of the above changes
}

// New returns an election that is not yet queued.
func New(cfg Config) *Election {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Election{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "leader"),
		changed: make(chan struct{}),
	}
}

// Queue puts this nimbus in the leader-lock queue (a no-op if it is in
// already). It does not block.
func (e *Election) Queue() { e.update(func() { e.queued = true }) }

// Leave takes this nimbus out of the queue: the current term, if any, ends
// and the lock node is deleted at once, so the next candidate leads
// without waiting for a session timeout. It blocks until the node is
// deleted or ctx ends; while ZooKeeper is unreachable the node goes with
// the session instead.
func (e *Election) Leave(ctx context.Context) error {
	e.update(func() { e.queued = false })
	for {
		e.mu.Lock()
		node, changed := e.node, e.changed
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

// IsLeader reports whether a term is live right now; for status only.
func (e *Election) IsLeader() bool { return e.Current() != nil }

// Changed returns a channel closed at the next change of queue membership,
// lock node or term.
func (e *Election) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// Await blocks until this nimbus leads, and returns the term; or until ctx
// ends. Callers wait for the term to end before awaiting the next one.
func (e *Election) Await(ctx context.Context) (*Term, error) {
	for {
		if t := e.Current(); t != nil {
			return t, nil
		}
		select {
		case <-e.Changed():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (e *Election) update(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Election) snapshot() (queued bool, changed <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queued, e.changed
}

// Run takes part in the election until ctx ends; then it ends any term,
// deletes its lock node (best effort) and returns ctx's error.
func (e *Election) Run(ctx context.Context) error {
	sess := e.cfg.Session
	conn := sess.Conn()
	lockDir := sess.Paths().LeaderLock()
	var (
		node        string // our lock node, "" when we hold none
		nodeSession int64  // the session that created it
		pred        string // the predecessor we watch
		predWatch   <-chan zk.Event
	)
	setNode := func(n string, sid int64) {
		node, nodeSession = n, sid
		e.update(func() { e.node = n })
	}
	defer func() {
		if node != "" {
			if err := conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				e.log.Debug("cannot delete lock node; it goes with the session", "node", node, "err", err)
			}
			setNode("", 0)
		}
	}()

	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		queued, wake := e.snapshot()
		state, sid, sessChanged := sess.State()
		var retry <-chan time.Time
		wait := func() {
			select {
			case <-ctx.Done():
			case <-wake:
			case <-sessChanged:
			case <-retry:
			case <-predWatch:
				pred, predWatch = "", nil
			}
		}
		hasSession := state == zk.StateHasSession && sid != 0

		// A node of an expired session is gone with it.
		if node != "" && hasSession && sid != nodeSession {
			e.log.Info("session expired; lock node lost", "node", node)
			setNode("", 0)
			pred, predWatch = "", nil
		}

		if !queued {
			if node != "" && hasSession {
				if err := conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
					e.log.Warn("cannot delete lock node; retrying", "node", node, "err", err)
					retry = time.After(retryDelay)
				} else {
					e.log.Info("left the leader queue", "node", node)
					setNode("", 0)
					pred, predWatch = "", nil
					continue
				}
			}
			wait()
			continue
		}
		if !hasSession {
			wait()
			continue
		}

		if node == "" {
			data := cluster.Encode(&clusterv1.NimbusInfo{Host: e.cfg.Self.GetHost(), Port: e.cfg.Self.GetPort()})
			if err := cluster.EnsurePath(conn, lockDir); err != nil {
				e.log.Warn("cannot create leader-lock directory; retrying", "err", err)
				retry = time.After(retryDelay)
				wait()
				continue
			}
			created, err := conn.CreateProtectedEphemeralSequential(sess.Paths().LockNodePrefix(), data, zk.WorldACL(zk.PermAll))
			if err != nil {
				e.log.Warn("cannot join the leader queue; retrying", "err", err)
				retry = time.After(retryDelay)
				wait()
				continue
			}
			setNode(created, sid)
			e.log.Info("joined the leader queue", "node", created)
		}

		children, _, err := conn.Children(lockDir)
		if err != nil {
			retry = time.After(retryDelay)
			wait()
			continue
		}
		queue := make(map[string]*clusterv1.NimbusInfo, len(children))
		for _, c := range children {
			queue[c] = nil
		}
		order := cluster.Queue(queue)
		me := -1
		for i, entry := range order {
			if lockDir+"/"+entry.Name == node {
				me = i
				break
			}
		}
		switch {
		case me < 0:
			e.log.Warn("lock node vanished; joining the queue again", "node", node)
			setNode("", 0)
		case me == 0:
			pred, predWatch = "", nil
			e.lead(ctx, node, order[0].Epoch(), nodeSession)
		default:
			p := lockDir + "/" + order[me-1].Name
			if p != pred || predWatch == nil {
				ok, _, w, err := conn.ExistsW(p)
				if err != nil {
					retry = time.After(retryDelay)
				} else if !ok {
					continue // predecessor already gone: look again
				} else {
					pred, predWatch = p, w
				}
			}
			wait()
		}
	}
}

// lead runs one term. It returns when the term ends: ctx ends, the session
// leaves the connected state or changes, the lock node is deleted, this
// nimbus leaves the queue, or it is not eligible.
func (e *Election) lead(ctx context.Context, node string, epoch, sid int64) {
	sess := e.cfg.Session
	if e.cfg.Eligible != nil {
		if err := e.cfg.Eligible(); err != nil {
			e.log.Warn("won the leader lock but may not lead; giving it back", "err", err, "epoch", epoch)
			e.update(func() { e.queued = false })
			return
		}
	}
	ok, _, nodeWatch, err := sess.Conn().ExistsW(node)
	if err != nil || !ok {
		return
	}
	tctx, cancel := context.WithCancel(ctx)
	t := &Term{ctx: tctx, cancel: cancel, sess: sess, node: node, epoch: epoch}
	e.update(func() { e.current = t })
	e.log.Info("leading", "epoch", epoch, "node", path.Base(node))

	reason := func() string {
		for {
			queued, wake := e.snapshot()
			state, id, sessChanged := sess.State()
			switch {
			case !queued:
				return "left the queue"
			case state != zk.StateHasSession:
				return "session " + state.String()
			case id != sid:
				return "session expired"
			}
			select {
			case <-ctx.Done():
				return "stopping"
			case ev := <-nodeWatch:
				if ev.Type == zk.EventNodeDeleted {
					return "lock node deleted"
				}
				// Any other event (data changed, watch invalidated): re-arm.
				ok, _, nodeWatch, err = sess.Conn().ExistsW(node)
				if err != nil || !ok {
					return "lock node lost"
				}
			case <-wake:
			case <-sessChanged:
			}
		}
	}()
	cancel()
	e.update(func() { e.current = nil })
	e.log.Info("leadership ended", "epoch", epoch, "reason", reason)
}
