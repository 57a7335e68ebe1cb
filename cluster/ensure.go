package cluster

import (
	"errors"
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
		_, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
