package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
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

	mu       sync.Mutex
	queued   bool   // whether to be in the queue
	queueGen uint64 // counts Queue calls
	node     string // the lock node this process holds, if any
	current  *Term
	changed  chan struct{} // closed when any of the above changes
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

// SetEligible sets the Eligible gate; call it before Run.
func (e *Election) SetEligible(f func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg.Eligible = f
}

// Queue puts this nimbus in the leader-lock queue (a no-op if it is in
// already). It does not block.
func (e *Election) Queue() {
	e.update(func() {
		e.queued = true
		e.queueGen++
	})
}

func (e *Election) queueGeneration() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queueGen
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

// Run takes part in the election until ctx ends, then returns ctx's
// error. A lock node still held then goes with the session, which the
// caller closes; call Leave first for an immediate hand-over.
func (e *Election) Run(ctx context.Context) error {
	sess := e.cfg.Session
	conn := sess.Conn()
	lockDir := sess.Paths().LeaderLock()
	var (
		node        string // our lock node, "" when we hold none
		nodeSession int64  // the session that owns it: its ephemeral owner
		guid        string // protected-create id of a node not yet found
		pred        string // the predecessor we watch
		predWatch   <-chan zk.Event
		ownWatch    <-chan zk.Event // on node; kept across terms
	)
	setNode := func(n string, owner int64) {
		node, nodeSession, pred, predWatch, ownWatch = n, owner, "", nil, nil
		e.update(func() { e.node = n })
	}
	defer e.update(func() { e.node = "" })

	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		queued, wake := e.snapshot()
		state, sid, sessChanged := sess.State()
		hasSession := state == zk.StateHasSession && sid != 0
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
		failed := func(msg string, err error) {
			e.log.Warn(msg, "err", err)
			retry = time.After(retryDelay)
			wait()
		}
		if !hasSession {
			wait()
			continue
		}
		// ZooKeeper deleted the node with the session that owned it.
		if node != "" && sid != nodeSession {
			e.log.Info("session expired; lock node lost", "node", node)
			setNode("", 0)
		}
		// A create whose answer was lost may have made a node: find it by
		// its protected id before anything else, so none is orphaned.
		if node == "" && guid != "" {
			n, owner, err := findProtected(conn, lockDir, guid)
			if err != nil {
				failed("cannot look for our lock node; retrying", err)
				continue
			}
			guid = ""
			if n != "" {
				setNode(n, owner)
			}
		}

		if !queued {
			if node != "" {
				if err := conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
					failed("cannot delete lock node; retrying", err)
					continue
				}
				e.log.Info("left the leader queue", "node", node)
				setNode("", 0)
				continue
			}
			wait()
			continue
		}

		if node == "" {
			guid = newGUID()
			n, owner, err := createProtected(conn, lockDir, guid, e.cfg.Self)
			if err != nil {
				failed("cannot join the leader queue; retrying", err)
				continue
			}
			guid = ""
			setNode(n, owner)
			e.log.Info("joined the leader queue", "node", n)
		}

		children, _, err := conn.Children(lockDir)
		if errors.Is(err, zk.ErrNoNode) {
			// Deleted by hand (the whole root, say): our node went with it.
			// Join again at once; the create re-creates the directory.
			// Retrying the listing instead would wait for someone else to
			// re-create it, forever if every candidate did the same.
			e.log.Warn("leader-lock directory missing; re-creating it and joining the queue again", "dir", lockDir, "node", node)
			setNode("", 0)
			continue
		}
		if err != nil {
			failed("cannot list the leader queue; retrying", err)
			continue
		}
		order := cluster.LockOrder(children)
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
			ownWatch = e.lead(ctx, node, order[0].Epoch(), nodeSession, ownWatch)
		default:
			p := lockDir + "/" + order[me-1].Name
			if p != pred || predWatch == nil {
				// GetW, not ExistsW: it leaves no watch on a missing node.
				_, stat, w, err := conn.GetW(p)
				switch {
				case errors.Is(err, zk.ErrNoNode):
					continue // gone already: look again
				case err != nil:
					retry = time.After(retryDelay)
				case stat.EphemeralOwner == 0:
					// No session owns it, so it never goes away by itself:
					// made by hand, it would block every election for good.
					e.log.Warn("removing a persistent node from the leader queue: no nimbus owns it", "node", p)
					if err := conn.Delete(p, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
						failed("cannot remove the persistent node from the leader queue; retrying", err)
					}
					continue
				default:
					pred, predWatch = p, w
				}
			}
			wait()
		}
	}
}

// protectedPrefix marks lock nodes with a creation id, as Curator and
// go-zookeeper do, so a create whose answer was lost can be found.
const protectedPrefix = "_c_"

func newGUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// createProtected creates our lock node with id guid, or finds it if an
// earlier attempt made it, and returns its path and owning session.
func createProtected(conn *zk.Conn, dir, guid string, self *clusterv1.NimbusInfo) (string, int64, error) {
	if err := cluster.EnsurePath(conn, dir); err != nil {
		return "", 0, err
	}
	data := cluster.Encode(&clusterv1.NimbusInfo{Host: self.GetHost(), Port: self.GetPort()})
	created, err := conn.Create(dir+"/"+protectedPrefix+guid+"-"+cluster.LockNodeSuffix, data,
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return "", 0, err
	}
	_, stat, err := conn.Get(created)
	if err != nil {
		return "", 0, err
	}
	return created, stat.EphemeralOwner, nil
}

// findProtected returns the lock node with id guid and its owner, or ""
// if there is none.
func findProtected(conn *zk.Conn, dir, guid string) (string, int64, error) {
	children, _, err := conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	for _, c := range children {
		if strings.HasPrefix(c, protectedPrefix+guid+"-") {
			_, stat, err := conn.Get(dir + "/" + c)
			if errors.Is(err, zk.ErrNoNode) {
				return "", 0, nil
			}
			if err != nil {
				return "", 0, err
			}
			return dir + "/" + c, stat.EphemeralOwner, nil
		}
	}
	return "", 0, nil
}

// lead runs one term on node, watched through ownWatch (armed here if
// nil). It returns when the term ends: ctx ends, the session leaves the
// connected state or changes, the node is deleted, this nimbus leaves the
// queue, or it is not eligible. It returns the watch on node if that is
// still armed, so reconnections don't pile watches up.
func (e *Election) lead(ctx context.Context, node string, epoch, sid int64, ownWatch <-chan zk.Event) <-chan zk.Event {
	sess := e.cfg.Session
	e.mu.Lock()
	eligible := e.cfg.Eligible
	e.mu.Unlock()
	if eligible != nil {
		gen := e.queueGeneration()
		if err := eligible(); err != nil {
			e.log.Warn("won the leader lock but may not lead; giving it back", "err", err, "epoch", epoch)
			// A Queue call made meanwhile wins: it came after the check.
			e.update(func() {
				if e.queueGen == gen {
					e.queued = false
				}
			})
			return ownWatch
		}
	}
	if ownWatch == nil {
		_, _, w, err := sess.Conn().GetW(node)
		if err != nil {
			return nil
		}
		ownWatch = w
	}
	tctx, cancel := context.WithCancel(ctx)
	t := &Term{ctx: tctx, cancel: cancel, sess: sess, node: node, epoch: epoch, began: time.Now()}
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
			case <-tctx.Done():
				return "a write was fenced"
			case ev := <-ownWatch:
				ownWatch = nil
				if ev.Type == zk.EventNodeDeleted {
					return "lock node deleted"
				}
				// Data changed or the watch was dropped: re-arm.
				_, _, w, err := sess.Conn().GetW(node)
				if err != nil {
					return "lock node lost"
				}
				ownWatch = w
			case <-wake:
			case <-sessChanged:
			}
		}
	}()
	cancel()
	e.update(func() { e.current = nil })
	e.log.Info("leadership ended", "epoch", epoch, "reason", reason)
	return ownWatch
}
