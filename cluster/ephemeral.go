package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
)

// KeepEphemeral keeps an ephemeral node at p holding data for as long as
// ctx lasts: it creates the node, re-creates it after a session expiry or
// a deletion by hand, and deletes it when ctx ends. While p's parent does
// not exist it waits for it; it never creates it. A node left at p by an
// earlier session (a previous run of this process that has not expired
// yet) is replaced, so a restarted daemon rejoins at once.
//
// ready, if not nil, is called after each (re)creation. KeepEphemeral
// returns when ctx ends.
func KeepEphemeral(ctx context.Context, sess *Session, p string, data []byte, log *slog.Logger, ready func()) {
	conn := sess.Conn()
	// watch is re-armed only after it fired, so reconnects don't pile up
	// watches on p.
	var watch <-chan zk.Event
	for {
		sid, err := sess.WaitSession(ctx)
		if err != nil {
			break
		}
		err = createOwned(conn, p, data, sid, log)
		var retry <-chan time.Time
		if errors.Is(err, errNoParent) {
			// Never create the parent (it may have been deleted on
			// purpose, a killed topology's, say) and never watch it: a
			// watch on a path that never returns lives as long as the
			// session. Look again shortly; the owner usually stops us.
			err, retry = nil, time.After(parentRetry)
		} else if err == nil {
			if ready != nil {
				ready()
			}
			if watch == nil {
				var ok bool
				ok, _, watch, err = conn.ExistsW(p)
				if err == nil && !ok {
					watch = nil
					continue // deleted already: create again
				}
			}
		}
		if err != nil {
			log.Warn("cannot register ephemeral node; retrying", "path", p, "err", err)
			retry = time.After(retryDelay)
		}
		// Wait for a deletion, a session change or the end.
		_, _, changed := sess.State()
		select {
		case <-ctx.Done():
		case <-watch:
			watch = nil
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
	if state, _, _ := sess.State(); state == zk.StateHasSession {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			log.Debug("cannot delete ephemeral node", "path", p, "err", err)
		}
	}
}

// parentRetry paces looks for a missing parent node.
const parentRetry = time.Second

// errNoParent: the node's parent does not exist.
var errNoParent = errors.New("cluster: parent node missing")

// createOwned makes sure p exists as an ephemeral node of session sid.
func createOwned(conn *zk.Conn, p string, data []byte, sid int64, log *slog.Logger) error {
	for range 3 {
		_, err := conn.Create(p, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			return errNoParent
		case !errors.Is(err, zk.ErrNodeExists):
			return err
		}
		_, stat, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if stat.EphemeralOwner == sid {
			return nil
		}
		log.Info("replacing node left by an earlier session", "path", p, "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
		if err := conn.Delete(p, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("cluster: %s keeps changing under us", p)
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}
