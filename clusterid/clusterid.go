package clusterid

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// fileName is the file in a daemon's local directory that holds the id.
const fileName = "cluster-id"

// Memory is the cluster id a daemon remembers, kept in its local
// directory.
type Memory struct {
	path string

	mu sync.Mutex
	id string
}

// Open reads the id remembered in dir, if any.
func Open(dir string) (*Memory, error) {
	m := &Memory{path: filepath.Join(dir, fileName)}
	data, err := os.ReadFile(m.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("clusterid: %w", err)
	default:
		m.id = strings.TrimSpace(string(data))
	}
	return m, nil
}

// ID is the id remembered; "" before the daemon saw its cluster named.
func (m *Memory) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Check says whether node, the cluster's /versions/cluster as read (nil:
// there is none), is the cluster this daemon belongs to. The first id it
// sees it remembers, on disk before it answers: a daemon that crashes right
// after must not forget. It returns nil for the cluster remembered and for
// a cluster not named yet that this daemon never saw named (a new one,
// or one whose leader is of a release that names none); otherwise an
// error that says what happened and what to do.
func (m *Memory) Check(node *clusterv1.ClusterVersion) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := node.GetClusterId()
	switch {
	case seen != "" && m.id == "":
		if err := m.remember(seen); err != nil {
			return err
		}
		return nil
	case seen == m.id:
		return nil
	case seen == "":
		return fmt.Errorf("%w: cluster %s is gone from ZooKeeper (the root was deleted, or ZooKeeper lost its data): restore a snapshot (stormctl admin snapshot restore), or, to start a new cluster, remove %s on every daemon",
			ErrOutage, m.id, m.path)
	}
	return fmt.Errorf("%w: ZooKeeper holds cluster %s, this daemon belongs to cluster %s: check storm.zookeeper.servers and storm.zookeeper.root, or remove %s to join the other",
		ErrOutage, seen, m.id, m.path)
}

// ErrOutage: the state in ZooKeeper is not the cluster the daemon belongs
// to.
var ErrOutage = errors.New("clusterid: the cluster's state is not in ZooKeeper")

// remember writes id to the file, atomically, then keeps it.
func (m *Memory) remember(id string) error {
	tmp := m.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("clusterid: remember %s: %w", id, err)
	}
	if err := os.Rename(tmp, m.path); err != nil {
		return fmt.Errorf("clusterid: remember %s: %w", id, err)
	}
	m.id = id
	return nil
}
