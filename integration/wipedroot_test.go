package integration

import (
	"bytes"
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/snapshot"
)

// TestWipedRootIsAnOutage: the ZooKeeper root deleted under a running
// cluster (deleteall) is an outage, not an empty cluster. Past every
// grace, the worker runs on with its pid, each nimbus keeps the code, no
// nimbus leads and the cluster summary says what happened. A snapshot
// saved before (stormctl admin snapshot save) is refused if truncated,
// from another cluster or from a newer release; restored, the cluster
// carries on: the same topologies, ids and statuses, scheduled again, the
// worker not restarted. A second restore onto the root, which now holds a
// topology the snapshot does not, is refused unless forced.
func TestWipedRootIsAnOutage(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(10*time.Second))
	ps := c.StartNimbuses(t, 2)
	c.WaitLeader(t, ps, 15*time.Second)
	sup := c.StartSupervisors(t, 1)[0]
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 10*time.Second, z.Addr())
	id := submitSleeper(t, cl, "survivor", 1).GetTopologyId()
	idle := submitSleeper(t, cl, "idle", 1).GetTopologyId()
	if err := cl.DeactivateTopology(t.Context(), "idle"); err != nil {
		t.Fatal(err)
	}
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

	file := filepath.Join(t.TempDir(), "cluster.snapshot")
	seeds := "--seeds=" + ps[0].Addr() + "," + ps[1].Addr()
	if out, errOut, code := stormctl(t, seeds, "admin", "snapshot", "save", file); code != 0 || !strings.Contains(out, "saved "+file) {
		t.Fatalf("snapshot save: exit %d\n%s%s", code, out, errOut)
	}
	deleteNodeByNode(t, conn, c.Root)

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
	look := time.NewTicker(200 * time.Millisecond)
	defer look.Stop()
	for ; time.Now().Before(deadline); <-look.C { // the outage holds: checked for 5 s, not waited for
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

	refuseBadSnapshots(t, cl, file)
	if out, errOut, code := stormctl(t, seeds, "admin", "snapshot", "restore", file); code != 0 || !strings.Contains(out, "restored 2 topologies") {
		t.Fatalf("snapshot restore: exit %d\n%s%s", code, out, errOut)
	}
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
	if info, err := cl.GetTopologyInfo(t.Context(), "idle"); err != nil || info.GetTopology().GetId() != idle ||
		info.GetTopology().GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE {
		t.Errorf("idle after the restore: %v, %v; want %s INACTIVE", info.GetTopology(), err, idle)
	}

	// The root holds a topology the snapshot does not: refused, unless
	// forced.
	extra := submitSleeper(t, cl, "extra", 1).GetTopologyId()
	out, errOut, code := stormctl(t, seeds, "admin", "snapshot", "restore", file)
	if code != 6 || !strings.Contains(errOut, "not empty") || !strings.Contains(errOut, extra) {
		t.Errorf("restore onto a root that holds %s: exit %d\n%s%s; want 6 (wrong status) naming it", extra, code, out, errOut)
	}
	if out, errOut, code := stormctl(t, seeds, "admin", "snapshot", "restore", file, "--force"); code != 0 || !strings.Contains(out, "kept topologies the snapshot does not hold: "+extra) {
		t.Errorf("forced restore: exit %d\n%s%s", code, out, errOut)
	}
}

// refuseBadSnapshots checks that a truncated snapshot, one of another
// cluster and one of a newer release are refused, saying why.
func refuseBadSnapshots(t *testing.T, cl *client.Client, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := func(change func(*clusterv1.SnapshotHeader)) []byte {
		contents, err := snapshot.Verify(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		h := proto.CloneOf(contents.Header)
		change(h)
		var b bytes.Buffer
		w := snapshot.NewWriter(&b, h)
		if err := snapshot.Read(bytes.NewReader(data), func(r *clusterv1.SnapshotRecord) error {
			switch {
			case r.GetNode() != nil:
				return w.Node(r.GetNode().GetPath(), r.GetNode().GetData())
			case r.GetFile() != nil:
				f := r.GetFile()
				return w.File(f.GetTopologyId(), f.GetName(), bytes.NewReader(f.GetData()))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, tc := range []struct {
		name, says string
		code       codes.Code
		data       []byte
	}{
		{"truncated", "truncated", codes.InvalidArgument, data[:len(data)-10]},
		{"of another cluster", "this nimbus belongs to cluster", codes.FailedPrecondition, rewritten(func(h *clusterv1.SnapshotHeader) { h.ClusterId = "another" })},
		{"of a newer release", "newer than this nimbus's", codes.FailedPrecondition, rewritten(func(h *clusterv1.SnapshotHeader) { h.Release = "9.9" })},
	} {
		_, err := cl.RestoreSnapshot(t.Context(), bytes.NewReader(tc.data), false)
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("a snapshot %s: %v, want %v saying %q", tc.name, err, tc.code, tc.says)
		}
	}
}

// holdsCode checks that nimbus p's store still holds topology id.
func holdsCode(p *testcluster.Process, id string) error {
	if _, err := os.Stat(filepath.Join(p.LocalDir, "nimbus", "code", id)); err != nil {
		return fmt.Errorf("%s no longer holds %s: %w", p.Name, id, err)
	}
	return nil
}

// The leader saves a snapshot every nimbus.snapshot.interval.secs when the
// cluster changed, keeps the last nimbus.snapshot.retain, and each holds
// the topologies of its moment.
func TestLeaderSavesSnapshots(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr())
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.snapshot.interval.secs", "1", "--nimbus.snapshot.retain", "2"))
	c.WaitLeader(t, ps, 15*time.Second)
	cl := newClient(t, c, ps...)
	dir := filepath.Join(ps[0].LocalDir, "nimbus", "snapshots")
	var ids []string
	for _, name := range []string{"first", "second", "third"} {
		ids = append(ids, submitSleeper(t, cl, name, 1).GetTopologyId())
		testcluster.WaitFor(t, 20*time.Second, "a snapshot holding "+name, func() error {
			files, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snapshot"))
			if len(files) == 0 || len(files) > 2 {
				return fmt.Errorf("%d snapshots, want 1 or 2", len(files))
			}
			held, err := snapshotTopologies(files[len(files)-1])
			if err != nil {
				return err
			}
			if !slices.Equal(held, ids) {
				return fmt.Errorf("the newest holds %v, want %v", held, ids)
			}
			return nil
		})
	}
}

// snapshotTopologies checks the snapshot in file and lists the topologies
// it holds, sorted.
func snapshotTopologies(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	err = snapshot.Read(f, func(r *clusterv1.SnapshotRecord) error {
		if id, ok := strings.CutPrefix(r.GetNode().GetPath(), "storms/"); ok {
			ids = append(ids, id)
		}
		return nil
	})
	slices.Sort(ids)
	return ids, err
}

// deleteNodeByNode deletes root and everything under it one node at a
// time, children before their parent, as zkCli's deleteall does: unlike
// testcluster.DeleteTree's single multi, the daemons see the nodes go in
// some order, assignments perhaps before the node that names the cluster
// (the race the graces of docs/ARCHITECTURE.md section 19 are for).
func deleteNodeByNode(t *testing.T, conn *zk.Conn, root string) {
	t.Helper()
	children, _, err := conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		deleteNodeByNode(t, conn, path.Join(root, c))
	}
	// A daemon may have made a directory again meanwhile: it stays.
	if err := conn.Delete(root, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete %s: %v", root, err)
	}
}
