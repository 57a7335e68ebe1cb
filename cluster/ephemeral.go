package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
)

// EphemeralNode is an ephemeral node a process keeps for as long as it
// runs (see Keep).
type EphemeralNode struct {
	Path string
	Data []byte
	// RecreateParent re-creates the parent directory when it is missing,
	// logging that (Session.Restore): for a daemon's registration in a
	// directory of the layout (/nimbuses, /supervisors). Without it Keep
	// waits for the parent and never creates it: a topology's directory
	// may have been deleted on purpose.
	RecreateParent bool
	// OwnerWrites says the owner rewrites the data itself (a supervisor's
	// heartbeat), so Keep leaves changes to it alone and holds no watch on
	// the node: it would fire at every write, and re-arming it would cost a
	// request per heartbeat. The owner reports a write that found the node
	// gone on Lost instead. Otherwise data that anyone else writes there
	// (garbage, say) is put back.
	OwnerWrites bool
	Lost        <-chan struct{}
	// Leave leaves the node to the session's expiry when ctx ends, instead
	// of deleting it: a supervisor whose workers outlive it must not look
	// gone before they are (docs/ARCHITECTURE.md section 17).
	Leave bool
	// Ready, if not nil, is called each time the node is (re)established:
	// created, or found ours after it was lost or a create's answer was.
	Ready func()
}

// KeepEphemeral keeps an ephemeral node at p holding data for as long as
// ctx lasts; see EphemeralNode.Keep. It waits for p's parent and never
// creates it.
func KeepEphemeral(ctx context.Context, sess *Session, p string, data []byte, log *slog.Logger, ready func()) {
	EphemeralNode{Path: p, Data: data, Ready: ready}.Keep(ctx, sess, log)
}

// Keep creates the node, re-creates it after a session expiry or a
// deletion by hand, puts its data back when someone else changes it, and
// deletes it when ctx ends (unless Leave). A node left at the path by an earlier session
// (a previous run of this process that has not expired yet) is replaced,
// so a restarted daemon rejoins at once. Keep returns when ctx ends.
func (n EphemeralNode) Keep(ctx context.Context, sess *Session, log *slog.Logger) {
	conn := sess.Conn()
	acl := sess.ACL()
	p := n.Path
	// watch is re-armed only after it fired, so reconnects don't pile up
	// watches on p.
	var watch <-chan zk.Event
	var readySid int64 // the session Ready was called for; 0 once the node is lost
	for {
		sid, err := sess.WaitSession(ctx)
		if err != nil {
			break
		}
		var retry <-chan time.Time
		created, err := createOwned(conn, n, acl, sid, log)
		switch {
		case errors.Is(err, errNoParent) && n.RecreateParent:
			if err = sess.restore(parentOf(p), log); err == nil {
				continue
			}
		case errors.Is(err, errNoParent):
			// Never watch the parent: a watch on a path that never
			// returns lives as long as the session. Look again
			// shortly; the owner usually stops us.
			err, retry = nil, time.After(parentRetry)
		case err == nil && (created || readySid != sid):
			readySid = sid
			if n.Ready != nil {
				n.Ready()
			}
		}
		if err == nil && retry == nil && watch == nil && !n.OwnerWrites {
			// The watch's read checks the data again: a write since
			// createOwned looked would otherwise go unnoticed.
			var data []byte
			data, _, watch, err = conn.GetW(p)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				watch = nil
				continue // deleted already: create again
			case err == nil && !bytes.Equal(data, n.Data):
				watch = nil
				continue // overwritten meanwhile: put it back
			}
		}
		if err != nil {
			log.Warn("cannot register ephemeral node; retrying", "path", p, "err", err)
			retry = time.After(retryDelay)
		}
		// Wait for a deletion or change, a session change or the end.
		_, _, changed := sess.State()
		select {
		case <-ctx.Done():
		case ev := <-watch:
			watch = nil
			if ev.Type == zk.EventNodeDeleted {
				readySid = 0
			}
		case <-n.Lost:
			readySid = 0
		case <-changed:
		case <-retry:
		}
		if ctx.Err() != nil {
			break
		}
	}
	// Only while connected: a request to an unreachable ZooKeeper can
	// block for several session timeouts. The node goes with the session
	// anyway.
	if state, _, _ := sess.State(); state == zk.StateHasSession && !n.Leave {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			log.Debug("cannot delete ephemeral node", "path", p, "err", err)
		}
	}
}

// parentRetry paces looks for a missing parent node.
const parentRetry = time.Second

// errNoParent: the node's parent does not exist.
var errNoParent = errors.New("cluster: parent node missing")

// createOwned makes sure n exists as an ephemeral node of session sid,
// holding n.Data unless n.OwnerWrites, and reports whether it created it
// (with acl).
func createOwned(conn *zk.Conn, n EphemeralNode, acl []zk.ACL, sid int64, log *slog.Logger) (bool, error) {
	p := n.Path
	for range 3 {
		_, err := conn.Create(p, n.Data, zk.FlagEphemeral, acl)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNoNode):
			return false, errNoParent
		case !errors.Is(err, zk.ErrNodeExists):
			return false, err
		}
		data, stat, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		if stat.EphemeralOwner == sid {
			if n.OwnerWrites || bytes.Equal(data, n.Data) {
				return false, nil
			}
			log.Warn("node overwritten by someone else; putting its data back", "path", p, "bytes", len(data))
			_, err := conn.Set(p, n.Data, stat.Version)
			if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
				continue
			}
			return false, err
		}
		// One multi: a node deleted and created in two steps would be
		// missing for a moment, and a leader scheduling then would take
		// a restarted supervisor for gone and move its workers.
		log.Info("replacing node left by an earlier session", "path", p, "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
		_, err = conn.Multi(&zk.DeleteRequest{Path: p, Version: stat.Version},
			&zk.CreateRequest{Path: p, Data: n.Data, Acl: acl, Flags: zk.FlagEphemeral})
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion):
			return false, err
		}
		// Changed or gone meanwhile (the old process's last heartbeat, its
		// expiry): look again.
	}
	return false, fmt.Errorf("cluster: %s keeps changing under us", p)
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}
