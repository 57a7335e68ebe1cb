package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-zookeeper/zk"
)

// EnsurePath creates p and its missing parents as empty persistent nodes.
// It is idempotent and safe to race with other processes.
func EnsurePath(conn *zk.Conn, p string) error {
	if ok, _, err := conn.Exists(p); err == nil && ok {
		return nil
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		_, err := conn.Create(cur, nil, 0, openACL())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// EnsureDirs creates the directories a daemon owns, at its start, and
// remembers which incarnation of the root they are in, so that a root
// deleted later (by hand) is recognised and reported.
func (s *Session) EnsureDirs(dirs ...string) error {
	for _, dir := range dirs {
		if err := EnsurePath(s.Conn(), dir); err != nil {
			return fmt.Errorf("cluster: create %s: %w", dir, err)
		}
	}
	s.NoticeRoot(nil)
	return nil
}

// Restore re-creates dir, which a daemon owns and found missing while it
// runs: someone deleted it, or the whole root, by hand. It logs that at
// warning level, and the root's deletion at error level (see NoticeRoot).
func (s *Session) Restore(dir string, log *slog.Logger) error {
	if err := EnsurePath(s.Conn(), dir); err != nil {
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
