package testcluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConnectZooKeeper opens a client session of the test's own on servers
// (client addresses, such as ZooKeeper.Addr or Ensemble.Addrs) with
// sessionTimeout, its info logging off; it is closed at the end of the
// test. The session is established in the background: the first request
// waits for it.
func ConnectZooKeeper(t testing.TB, sessionTimeout time.Duration, servers ...string) *zk.Conn {
	t.Helper()
	conn, err := dialZooKeeper(servers, sessionTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// ConnectZooKeeperAs is ConnectZooKeeper for a client authenticated with
// ZooKeeper's digest scheme as userPassword (user:password), as daemons
// with storm.zookeeper.auth.scheme digest are, or as an operator is. It
// waits for the session and the authentication, and fails the test if
// either fails within sessionTimeout. go-zookeeper sends the credentials
// again whenever it reconnects.
func ConnectZooKeeperAs(t testing.TB, sessionTimeout time.Duration, userPassword string, servers ...string) *zk.Conn {
	t.Helper()
	conn := ConnectZooKeeper(t, sessionTimeout, servers...)
	done := make(chan error, 1)
	go func() { done <- conn.AddAuth("digest", []byte(userPassword)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("testcluster: authenticate to ZooKeeper %v: %v", servers, err)
		}
	case <-time.After(sessionTimeout):
		conn.Close() // ends AddAuth
		t.Fatalf("testcluster: no ZooKeeper session on %v within %v to authenticate", servers, sessionTimeout)
	}
	return conn
}

// dialZooKeeper is ConnectZooKeeper for a session that its caller closes.
func dialZooKeeper(servers []string, sessionTimeout time.Duration) (*zk.Conn, error) {
	conn, _, err := zk.Connect(servers, sessionTimeout, zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("testcluster: connect to ZooKeeper %v: %w", servers, err)
	}
	return conn, nil
}

// DeleteTree deletes root and everything under it, as an operator's
// recursive delete would, but in one multi: daemons that re-create nodes
// the moment they vanish cannot make it fail half-way, so the test sees
// the state it asked for. It retries while the tree changes under it and
// fails the test if root still exists after timeout.
func DeleteTree(t testing.TB, conn *zk.Conn, root string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "delete "+root, func() error {
		var paths []string // parents before children
		var walk func(p string) error
		walk = func(p string) error {
			children, _, err := conn.Children(p)
			if err != nil {
				return err
			}
			paths = append(paths, p)
			for _, c := range children {
				if err := walk(p + "/" + c); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
			}
			return nil
		}
		err := walk(root)
		if errors.Is(err, zk.ErrNoNode) && len(paths) == 0 {
			return nil // gone
		}
		if err != nil {
			return err
		}
		ops := make([]any, 0, len(paths))
		for i := len(paths) - 1; i >= 0; i-- { // children first
			ops = append(ops, &zk.DeleteRequest{Path: paths[i], Version: -1})
		}
		if _, err := conn.Multi(ops...); err != nil {
			return fmt.Errorf("multi delete of %d nodes: %w", len(ops), err)
		}
		return nil
	})
}
