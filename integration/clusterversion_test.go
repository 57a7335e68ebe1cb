package integration

import (
	"fmt"
	"path"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// TestClusterVersionGatesKeepingWorkers: the cluster version is the
// lowest release registered, shown in the cluster summary and written by
// the leader to /versions/cluster. While a daemon of release 0.1 is
// registered (here a registration without a release, as 0.1 wrote them),
// a supervisor stopped with SIGTERM stops its workers, since a 0.1
// supervisor would not adopt them; once it is gone, a stopped supervisor
// leaves them to their keepers and the next one adopts them, same pid.
func TestClusterVersionGatesKeepingWorkers(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	// A session long enough that a keeper waits out a supervisor's
	// restart (the adoption bound derives from it; section 17).
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(10*time.Second))
	ps := c.StartNimbuses(t, 1)
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	slots := testcluster.FreePorts(t, 2)
	sup, err := c.StartSupervisor(testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 10*time.Second, z.Addr())
	id := submitSleeper(t, cl, "versioned", 1).GetTopologyId()
	pids := sleepers(t, conn, id, 1, 30*time.Second, sup)

	waitClusterVersion(t, c, leader, conn, version.Release, nil)

	// A nimbus of release 0.1 registers.
	old := path.Join(c.Root, "nimbuses", "127.0.0.1:1")
	data := cluster.Encode(&clusterv1.NimbusInfo{Host: "127.0.0.1", Port: 1, Version: "0.1.0", StartTimeUnixMs: time.Now().UnixMilli()})
	if _, err = conn.Create(old, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitClusterVersion(t, c, leader, conn, version.Oldest, []string{"127.0.0.1:1"})

	// The supervisor stops its worker when it stops.
	sup = restartSupervisor(t, c, sup, slots)
	for _, pid := range pids {
		if syscall.Kill(int(pid), 0) == nil {
			t.Errorf("worker %d still runs after its supervisor stopped at cluster version %s", pid, version.Oldest)
		}
	}
	pids = sleepers(t, conn, id, 1, 30*time.Second, sup)

	// The old nimbus goes: a stopped supervisor's worker is adopted.
	if err := conn.Delete(old, -1); err != nil {
		t.Fatal(err)
	}
	waitClusterVersion(t, c, leader, conn, version.Release, nil)
	sup = restartSupervisor(t, c, sup, slots)
	if now := sleepers(t, conn, id, 1, 30*time.Second, sup); !equalPids(now, pids) {
		t.Errorf("worker pids %v after a restart at cluster version %s, were %v", now, version.Release, pids)
	}
}

// waitClusterVersion waits until the cluster summary and /versions/cluster
// both say release, the node naming lowest among the daemons at it (nil:
// not checked).
func waitClusterVersion(t *testing.T, c *testcluster.Cluster, p *testcluster.Process, conn *zk.Conn, release string, lowest []string) {
	t.Helper()
	testcluster.WaitFor(t, 20*time.Second, "cluster version "+release, func() error {
		if got := clusterSummary(t, c, p).GetClusterVersion(); got != release {
			return fmt.Errorf("the cluster summary says %q", got)
		}
		data, _, err := conn.Get(path.Join(c.Root, "versions", "cluster"))
		if err != nil {
			return err
		}
		v := new(clusterv1.ClusterVersion)
		if err := cluster.Decode("cluster version", data, v); err != nil {
			return err
		}
		if v.GetRelease() != release {
			return fmt.Errorf("/versions/cluster says %q", v.GetRelease())
		}
		for _, d := range lowest {
			if !slices.Contains(v.GetLowest(), d) {
				return fmt.Errorf("/versions/cluster names %v at %s, not %s", v.GetLowest(), release, d)
			}
		}
		return nil
	})
}

// restartSupervisor stops sup with SIGTERM and starts it again on its
// local dir and slots, returning the new process.
func restartSupervisor(t *testing.T, c *testcluster.Cluster, sup *testcluster.Process, slots []int) *testcluster.Process {
	t.Helper()
	if err := sup.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	back, err := c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	return back
}
