package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-zookeeper/zk"
)

// EnsurePath creates p and its missing parents as empty persistent nodes
// open to anyone, through a connection that is not a daemon's (a tool's, a
// test's). It is idempotent and safe to race with other processes. Daemons
// use Session.EnsurePath, whose nodes get the cluster's ACL.
func EnsurePath(conn *zk.Conn, p string) error { return ensurePath(conn, p, zk.WorldACL(zk.PermAll)) }

// EnsurePath creates p and its missing parents as empty persistent nodes
// with the session's ACL. It is idempotent and safe to race with other
// processes. Nodes that exist keep their ACL.
func (s *Session) EnsurePath(p string) error { return ensurePath(s.Conn(), p, s.access.acl) }

func ensurePath(conn *zk.Conn, p string, acl []zk.ACL) error {
	if ok, _, err := conn.Exists(p); err == nil && ok {
		return nil
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		_, err := conn.Create(cur, nil, 0, acl)
		if errors.Is(err, zk.ErrNoAuth) {
			// ZooKeeper checks the parent's CREATE permission before it
			// answers NodeExists: a parent above the root may be closed
			// to us and still hold the root.
			if ok, _, xerr := conn.Exists(cur); xerr == nil && ok {
				err = nil
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// EnsureDirs creates the directories a daemon owns, at its start, and
// remembers which incarnation of the root they are in, so that a root
// deleted later (by hand) is recognised and reported.
//
// It then looks at the ACLs of the root and of dirs (checkACLs). It fails
// if they keep this daemon from writing: credentials missing or not the
// cluster's. With authentication on, nodes that anyone may still change (a
// root created before ACLs were turned on) are reported at error level with
// the zkCli.sh command that migrates them (MigrateCommand), and the daemon
// works on: anyone, itself included, may write them.
//
// It does not change those ACLs itself. Turning ACLs on means restarting
// every daemon with the credentials, one at a time; a daemon that locked
// the tree at its start would leave the others, still without them, unable
// to heartbeat, register or write as leader until they restart: supervisors
// would be declared dead and topologies rescheduled nowhere. Only the
// operator knows when every daemon has the credentials.
func (s *Session) EnsureDirs(dirs ...string) error {
	for _, dir := range dirs {
		err := s.EnsurePath(dir)
		if err == nil {
			// Create it again: ZooKeeper checks the ACL given and the
			// parent's CREATE permission before it answers NodeExists, so
			// a daemon learns now, not at its first write, that they are
			// refused.
			if _, err = s.Conn().Create(dir, nil, 0, s.access.acl); errors.Is(err, zk.ErrNodeExists) {
				err = nil
			}
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, zk.ErrInvalidACL):
			return fmt.Errorf("cluster: create %s with ACL %s: %w: ZooKeeper does not accept storm.zookeeper.superACL",
				dir, formatACL(s.access.acl, true), err)
		case errors.Is(err, zk.ErrNoAuth):
			if _, cerr := s.checkWritable(parentOf(dir)); cerr != nil && !errors.Is(cerr, zk.ErrNoNode) {
				return cerr
			}
		}
		return fmt.Errorf("cluster: create %s: %w", dir, err)
	}
	if err := s.checkACLs(dirs); err != nil {
		return err
	}
	s.NoticeRoot(nil)
	return nil
}

// restore re-creates dir, which a daemon owns and found missing while it
// runs: someone deleted it, or the whole root, by hand. It logs that at
// warning level, and the root's deletion at error level (see NoticeRoot).
func (s *Session) restore(dir string, log *slog.Logger) error {
	if err := s.EnsurePath(dir); err != nil {
		return fmt.Errorf("cluster: re-create %s: %w", dir, err)
	}
	s.NoticeRoot(log)
	log.Warn("ZooKeeper directory was deleted; re-created it", "path", dir)
	return nil
}

// NoticeRoot checks whether the root (storm.zookeeper.root) is the one
// this process saw before, by its creation zxid, and logs at error level,
// once per deletion, when it was deleted (and perhaps re-created since):
// everything in it is gone, topologies and assignments included, and the
// daemons re-create only their own nodes. Callers are the parts that find
// a node of theirs missing. log nil records the root without logging.
func (s *Session) NoticeRoot(log *slog.Logger) {
	ok, stat, err := s.Conn().Exists(s.paths.Root)
	if err != nil {
		return // disconnected: whoever called will look again
	}
	czxid := rootMissing
	if ok {
		czxid = stat.Czxid
	}
	prev := s.rootCzxid.Swap(czxid)
	if log == nil || prev == 0 || prev == czxid || prev == rootMissing {
		return // first look, unchanged, or reported when it went missing
	}
	log.Error("ZooKeeper root was deleted: its topologies and assignments are gone; re-creating this daemon's nodes",
		"root", s.paths.Root)
}

// rootMissing stands for "no root" where a creation zxid is kept.
const rootMissing int64 = -1
