package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// retryDelay paces retries after ZooKeeper errors that no watch or session
// change will announce.
const retryDelay = 250 * time.Millisecond

// candidate is what Run remembers between its passes: this process's lock
// node and the watches it holds.
type candidate struct {
	e    *Election
	sess *cluster.Session
	conn *zk.Conn
	dir  string // the leader-lock directory

	node      string          // our lock node, "" when we hold none
	session   int64           // the session that owns node: its ephemeral owner
	guid      string          // protected-create id of a node not yet found
	pred      string          // the predecessor we watch
	predWatch <-chan zk.Event // on pred
	ownWatch  <-chan zk.Event // on node; kept across terms
}

// Run takes part in the election until ctx ends, then returns ctx's
// error. A lock node still held then goes with the session, which the
// caller closes; call Leave first for an immediate hand-over.
func (e *Election) Run(ctx context.Context) error {
	sess := e.cfg.Session
	c := &candidate{e: e, sess: sess, conn: sess.Conn(), dir: sess.Paths().LeaderLock()}
	defer c.setNode("", 0)
	for ctx.Err() == nil {
		c.step(ctx)
	}
	return ctx.Err()
}

// step is one pass of the election, in the order of the numbered steps: it
// brings this nimbus one step closer to where it should be (out of the
// queue, queued behind its predecessor, or leading) and, when there is
// nothing left to do, waits for a change that may give it something.
func (c *candidate) step(ctx context.Context) {
	queued, h, wake := c.e.wanted()
	state, sid, sessChanged := c.sess.State()
	w := wakeups{ctx: ctx, wanted: wake, session: sessChanged}

	// 1. Nothing can be done without a session: wait for one.
	if state != zk.StateHasSession || sid == 0 {
		c.wait(w)
		return
	}
	// 2. ZooKeeper deleted our node with the session that owned it.
	if c.node != "" && sid != c.session {
		c.e.log.Info("session expired; lock node lost", "node", c.node)
		c.setNode("", 0)
	}
	// 3. A create whose answer was lost may have made a node: find it by
	// its protected id before anything else, so that none is orphaned.
	if c.node == "" && c.guid != "" {
		if err := c.findLostCreate(); err != nil {
			c.retry(w, "cannot look for our lock node; retrying", err)
			return
		}
	}
	// 4. Asked to hand over: delete our node and those we pass over.
	if h != nil {
		c.handOver(w, h)
		return
	}
	// 5. Out of the queue: delete our node, if any, and wait to be queued.
	if !queued {
		c.leave(w)
		return
	}
	// 6. In the queue: hold a node.
	if c.node == "" {
		if err := c.join(sid); err != nil {
			c.retry(w, "cannot join the leader queue; retrying", err)
			return
		}
	}
	// 7. Find our place: lead when first, else wait behind the node before
	// ours.
	children, _, err := c.conn.Children(c.dir)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		// Deleted by hand (the whole root, say): our node went with it.
		// Join again at once; the create re-creates the directory.
		// Retrying the listing instead would wait for someone else to
		// re-create it, forever if every candidate did the same.
		c.e.log.Warn("leader-lock directory missing; re-creating it and joining the queue again", "dir", c.dir, "node", c.node)
		c.setNode("", 0)
		return
	case err != nil:
		c.retry(w, "cannot list the leader queue; retrying", err)
		return
	}
	order := cluster.LockOrder(children)
	switch me := c.position(order); {
	case me < 0:
		c.e.log.Warn("lock node vanished; joining the queue again", "node", c.node)
		c.setNode("", 0)
	case me == 0:
		c.pred, c.predWatch = "", nil
		c.ownWatch = c.e.lead(ctx, c.node, order[0].Epoch(), c.session, c.ownWatch)
	default:
		c.follow(w, c.dir+"/"+order[me-1].Name)
	}
}

// wakeups are the changes that can give the election something to do,
// taken before the state they guard was read.
type wakeups struct {
	ctx     context.Context
	wanted  <-chan struct{} // Queue, Withdraw, a term's start or end
	session <-chan struct{}
	retry   <-chan time.Time
}

// wait blocks until one of w, or the predecessor's watch, fires.
func (c *candidate) wait(w wakeups) {
	select {
	case <-w.ctx.Done():
	case <-w.wanted:
	case <-w.session:
	case <-w.retry:
	case <-c.predWatch:
		c.pred, c.predWatch = "", nil
	}
}

// retry logs a failed step and waits retryDelay, or less if something
// changes meanwhile.
func (c *candidate) retry(w wakeups, msg string, err error) {
	c.e.log.Warn(msg, "err", err)
	w.retry = time.After(retryDelay)
	c.wait(w)
}

// setNode records the lock node this process holds ("" for none) and
// forgets the watches that belonged to the last one.
func (c *candidate) setNode(node string, owner int64) {
	c.node, c.session, c.pred, c.predWatch, c.ownWatch = node, owner, "", nil, nil
	c.e.update(func() { c.e.node = node })
}

// leave deletes our lock node, if we hold one; otherwise it waits to be
// queued.
func (c *candidate) leave(w wakeups) {
	if c.node == "" {
		c.wait(w)
		return
	}
	if err := c.conn.Delete(c.node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		c.retry(w, "cannot delete lock node; retrying", err)
		return
	}
	c.e.log.Info("left the leader queue", "node", c.node)
	c.setNode("", 0)
}

// handOver deletes, in one write, our node and the nodes queued between
// it and h.next, so that h.next leads (Election.StepDown). A node that
// vanished since h was asked for ends it as done; a next no longer queued
// behind us fails it, deleting nothing.
func (c *candidate) handOver(w wakeups, h *handover) {
	if c.node != h.node {
		c.e.finish(h, ErrNodeGone) // with its session, or by hand
		return
	}
	children, _, err := c.conn.Children(c.dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		c.retry(w, "cannot list the leader queue to hand over; retrying", err)
		return
	}
	order := cluster.LockOrder(children)
	if c.position(order) < 0 {
		c.setNode("", 0)
		c.e.finish(h, ErrNodeGone) // perhaps our own write, whose answer was lost
		return
	}
	passed, err := c.passedOver(order, h.next)
	if err != nil {
		c.e.finish(h, err)
		return
	}
	ops := make([]any, 0, len(passed)+1)
	for _, p := range append(passed, c.node) {
		ops = append(ops, &zk.DeleteRequest{Path: p, Version: cluster.AnyVersion})
	}
	if _, err := c.conn.Multi(ops...); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			c.retry(w, "the leader queue changed while handing over; looking again", err)
			return
		}
		c.retry(w, "cannot delete lock nodes to hand over; retrying", err)
		return
	}
	c.e.log.Info("handed leadership over", "node", path.Base(c.node), "next", h.next, "passed_over", len(passed))
	c.setNode("", 0)
	c.e.finish(h, nil)
}

// passedOver lists the nodes queued between ours and next (none when next
// is ""), as paths; it fails when next is not queued behind ours, which
// is in order.
func (c *candidate) passedOver(order []cluster.LockEntry, next string) ([]string, error) {
	if next == "" {
		return nil, nil
	}
	var passed []string
	for _, entry := range order[c.position(order)+1:] {
		if entry.Name == next {
			return passed, nil
		}
		passed = append(passed, c.dir+"/"+entry.Name)
	}
	return nil, fmt.Errorf("%w: %s, behind %s", ErrNextNotQueued, next, path.Base(c.node))
}

// join creates our lock node, on session sid, after removing any that
// an earlier process of this nimbus left.
func (c *candidate) join(sid int64) error {
	if err := c.clearPast(sid); err != nil {
		return err
	}
	c.guid = newGUID()
	node, owner, err := createProtected(c.sess, c.dir, c.guid, c.e.cfg.Self)
	if err != nil {
		return err // the guid stays: the next pass looks for the node first
	}
	c.guid = ""
	c.setNode(node, owner)
	c.e.log.Info("joined the leader queue", "node", node)
	return nil
}

// clearPast deletes the lock nodes that name this nimbus's address but
// belong to another session than sid: an earlier process of this nimbus
// (killed, then restarted by its service manager) whose session has not
// expired yet. That process is gone, since this one holds its port, and
// its node would otherwise hold the queue, or lead it, until the expiry.
func (c *candidate) clearPast(sid int64) error {
	children, _, err := c.conn.Children(c.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	self := cluster.HostPort(c.e.cfg.Self)
	for _, name := range children {
		path := c.dir + "/" + name
		data, stat, err := c.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		info := new(clusterv1.NimbusInfo)
		if cluster.Decode(path, data, info) != nil || cluster.HostPort(info) != self || stat.EphemeralOwner == sid {
			continue
		}
		if err := c.conn.Delete(path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		c.e.log.Warn("removed the lock node an earlier process of this nimbus left", "node", path,
			"session", fmt.Sprintf("0x%x", stat.EphemeralOwner))
	}
	return nil
}

// findLostCreate looks for the node an earlier create made under guid.
func (c *candidate) findLostCreate() error {
	node, owner, err := findProtected(c.conn, c.dir, c.guid)
	if err != nil {
		return err
	}
	c.guid = ""
	if node != "" {
		c.setNode(node, owner)
	}
	return nil
}

// position is our index in the queue, or -1 when our node is not in it.
func (c *candidate) position(order []cluster.LockEntry) int {
	for i, entry := range order {
		if c.dir+"/"+entry.Name == c.node {
			return i
		}
	}
	return -1
}

// follow waits behind pred, the node before ours: its deletion (or any
// other change) starts the next pass. Only that node is watched, so a
// leader change wakes one candidate, not the whole queue.
func (c *candidate) follow(w wakeups, pred string) {
	if pred != c.pred || c.predWatch == nil {
		// GetW, not ExistsW: it leaves no watch on a missing node.
		_, stat, watch, err := c.conn.GetW(pred)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return // gone already: look again
		case err != nil:
			w.retry = time.After(retryDelay)
		case stat.EphemeralOwner == 0:
			// No session owns it, so it never goes away by itself: made by
			// hand, it would block every election for good.
			c.e.log.Warn("removing a persistent node from the leader queue: no nimbus owns it", "node", pred)
			if err := c.conn.Delete(pred, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
				c.retry(w, "cannot remove the persistent node from the leader queue; retrying", err)
			}
			return
		default:
			c.pred, c.predWatch = pred, watch
		}
	}
	c.wait(w)
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
func createProtected(sess *cluster.Session, dir, guid string, self *clusterv1.NimbusInfo) (string, int64, error) {
	conn := sess.Conn()
	if err := sess.EnsurePath(dir); err != nil {
		return "", 0, err
	}
	data := cluster.Encode(&clusterv1.NimbusInfo{Host: self.GetHost(), Port: self.GetPort()})
	created, err := conn.Create(dir+"/"+protectedPrefix+guid+"-"+cluster.LockNodeSuffix, data,
		zk.FlagEphemeral|zk.FlagSequence, sess.ACL())
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
