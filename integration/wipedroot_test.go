package integration

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// TestWipedRootIsAnOutage: the ZooKeeper root deleted under a running
// cluster (deleteall) is an outage, not an empty cluster. Past every
// grace, the worker runs on with its pid, each nimbus keeps the code, no
// nimbus leads and the cluster summary says what happened. Once the
// persistent nodes are put back as they were (what a snapshot restore
// does), the cluster carries on: the same topology, ACTIVE, scheduled
// again, its worker adopted, not restarted.
func TestWipedRootIsAnOutage(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(10*time.Second))
	ps := c.StartNimbuses(t, 2)
	c.WaitLeader(t, ps, 15*time.Second)
	sup := c.StartSupervisors(t, 1)[0]
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 10*time.Second, z.Addr())
	id := submitSleeper(t, cl, "survivor", 1).GetTopologyId()
	pids := sleepers(t, conn, id, 1, 30*time.Second, sup)
	for _, p := range append(slices.Clone(ps), sup) {
		testcluster.WaitFor(t, 20*time.Second, p.Name+" remembering its cluster", func() error {
			files, _ := filepath.Glob(filepath.Join(p.LocalDir, "*", "cluster-id"))
			if len(files) == 0 {
				return errors.New("no cluster-id file")
			}
			return nil
		})
	}

	saved := persistentNodes(t, conn, c.Root)
	deleteAll(t, conn, c.Root)

	// Longer than every grace: nothing is stopped or removed.
	testcluster.WaitFor(t, 20*time.Second, "both nimbuses reporting the outage", func() error {
		for _, p := range ps {
			if problem := clusterSummary(t, c, p).GetClusterStateProblem(); !strings.Contains(problem, "gone from ZooKeeper") {
				return fmt.Errorf("%s reports %q", p.Name, problem)
			}
		}
		return nil
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) { // the outage holds: checked for 5 s, not waited for
		for _, p := range ps {
			if err := holdsCode(p, id); err != nil {
				t.Fatalf("during the outage: %v", err)
			}
		}
		for port, pid := range pids {
			if !processRuns(int(pid)) {
				t.Fatalf("during the outage the worker on %d (pid %d) stopped", port, pid)
			}
		}
		if _, leader, err := c.AgreedLeader(ps); err == nil && leader != nil {
			t.Fatalf("%s leads a wiped root", leader.Name)
		}
	}

	restoreNodes(t, conn, saved)
	c.WaitLeader(t, ps, 30*time.Second)
	testcluster.WaitFor(t, 30*time.Second, id+" ACTIVE and running again", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), "survivor")
		if err != nil {
			return err
		}
		if info.GetTopology().GetId() != id || info.GetTopology().GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE ||
			info.GetTopology().GetNumWorkersRunning() != 1 {
			return fmt.Errorf("%v", info.GetTopology())
		}
		return nil
	})
	if now := sleepers(t, conn, id, 1, 10*time.Second, sup); !equalPids(now, pids) {
		t.Errorf("after the restore the worker is %v, was %v: restarted", now, pids)
	}
}

// holdsCode checks that nimbus p's store still holds topology id.
func holdsCode(p *testcluster.Process, id string) error {
	if _, err := os.Stat(filepath.Join(p.LocalDir, "nimbus", "code", id)); err != nil {
		return fmt.Errorf("%s no longer holds %s: %w", p.Name, id, err)
	}
	return nil
}

type savedNode struct {
	path string
	data []byte
}

// persistentNodes reads every persistent node under root, parents first:
// what a snapshot holds (ephemeral nodes are their owners' to recreate).
func persistentNodes(t *testing.T, conn *zk.Conn, root string) []savedNode {
	t.Helper()
	var out []savedNode
	var walk func(p string)
	walk = func(p string) {
		data, stat, err := conn.Get(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		if stat.EphemeralOwner != 0 {
			return
		}
		out = append(out, savedNode{p, data})
		children, _, err := conn.Children(p)
		if err != nil {
			t.Fatalf("list %s: %v", p, err)
		}
		for _, c := range children {
			walk(path.Join(p, c))
		}
	}
	walk(root)
	return out
}

// deleteAll deletes root and everything under it, as zkCli's deleteall
// does: children before their parent.
func deleteAll(t *testing.T, conn *zk.Conn, root string) {
	t.Helper()
	children, _, err := conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		deleteAll(t, conn, path.Join(root, c))
	}
	if err := conn.Delete(root, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete %s: %v", root, err)
	}
}

// restoreNodes writes saved back, parents first; a node that exists (a
// directory a daemon made again) gets its data set.
func restoreNodes(t *testing.T, conn *zk.Conn, saved []savedNode) {
	t.Helper()
	for _, n := range saved {
		_, err := conn.Create(n.path, n.data, 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(n.path, n.data, -1)
		}
		if err != nil {
			t.Fatalf("restore %s: %v", n.path, err)
		}
	}
}
