package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/snapshot"
)

var (
	snapshotTopologies  = flag.Int("snapshot-topologies", 1000, "topologies in BenchmarkSnapshot's cluster")
	snapshotSupervisors = flag.Int("snapshot-supervisors", 1000, "simulated supervisors in BenchmarkSnapshot's cluster")
)

// BenchmarkSnapshot measures a cluster snapshot at -snapshot-topologies
// topologies placed on -snapshot-supervisors simulated supervisors (two
// nimbuses): the time to save it (SaveSnapshot to a file, verified) and its
// size, without and with the code; then the root deleted, the time from
// sending the snapshot to a nimbus (RestoreSnapshot) until a leader acts
// again and sees every topology scheduled, and whether every assignment
// came back as it was (a worker whose assignment did not change is not
// restarted).
func BenchmarkSnapshot(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	c := testcluster.New(b, z.Addr(), testcluster.WithRoot(scaleRoot), testcluster.WithSessionTimeout(scaleSession),
		testcluster.WithLogf(discard))
	ps := c.StartNimbuses(b, 2, testcluster.WithArgs("--topology.min.replication.count", "1", "--nimbus.snapshot.interval.secs", "0"))
	c.WaitLeader(b, ps, 30*time.Second)
	conn := testcluster.ConnectZooKeeper(b, 10*time.Second, z.Addr())
	cl, err := client.New(testcluster.Addrs(ps...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := submitTiny(cl, *snapshotTopologies, nil); err != nil {
		b.Fatal(err)
	}
	sims, err := startSimSupervisors([]string{z.Addr()}, scaleRoot, *snapshotSupervisors, 32, scaleHeartbeat, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sims.Close()
	waitPlaced(b, conn, *snapshotTopologies)
	before := assignments(b, conn)

	dir := b.TempDir()
	plain := saveTimed(b, cl, filepath.Join(dir, "plain.snapshot"), false)
	saveTimed(b, cl, filepath.Join(dir, "with-code.snapshot"), true)

	testcluster.DeleteTree(b, conn, scaleRoot, 30*time.Second)
	if err := testcluster.Poll(30*time.Second, func() error {
		cs, err := c.API(ps[0]).GetClusterInfo(context.Background(), &nimbusv1.GetClusterInfoRequest{OmitSupervisors: true, OmitTopologies: true})
		if err == nil && cs.GetCluster().GetClusterStateProblem() == "" {
			err = fmt.Errorf("no outage reported yet")
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(plain)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	began := time.Now()
	if _, err := cl.RestoreSnapshot(context.Background(), f, false); err != nil {
		b.Fatal(err)
	}
	written := time.Since(began)
	// Scheduled again: a leader acts, and sees every topology's slots
	// filled.
	if err := testcluster.Poll(5*time.Minute, func() error {
		_, leader, err := c.AgreedLeader(ps)
		if err == nil {
			err = acting(c, leader)
		}
		if err != nil {
			return err
		}
		cs, err := c.API(leader).GetClusterInfo(context.Background(), &nimbusv1.GetClusterInfoRequest{OmitSupervisors: true, OmitNimbuses: true})
		if err != nil {
			return err
		}
		for _, t := range cs.GetCluster().GetTopologies() {
			if t.GetMissingSlots() > 0 || t.GetNumWorkersAssigned() == 0 {
				return fmt.Errorf("%s not scheduled yet", t.GetName())
			}
		}
		if n := len(cs.GetCluster().GetTopologies()); n != *snapshotTopologies {
			return fmt.Errorf("%d topologies", n)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	scheduled := time.Since(began)
	after := assignments(b, conn)
	changed := 0
	for id, a := range before {
		if !bytes.Equal(after[id], a) {
			changed++
		}
	}
	fmt.Fprintf(os.Stderr, "| restore (%d topologies, %d supervisors) | nodes written in %v | every topology scheduled again in %v | %d of %d assignments changed |\n",
		*snapshotTopologies, *snapshotSupervisors, written.Round(time.Millisecond), scheduled.Round(time.Millisecond), changed, len(before))
	b.ReportMetric(scheduled.Seconds(), "restore-s")
	if changed > 0 {
		b.Errorf("%d assignments came back otherwise: their workers would restart", changed)
	}
}

// saveTimed saves a snapshot into path, verifies it, prints the time and
// size, and returns path.
func saveTimed(b *testing.B, cl *client.Client, path string, withCode bool) string {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	began := time.Now()
	if err := cl.SaveSnapshot(context.Background(), withCode, f); err != nil {
		b.Fatal(err)
	}
	took := time.Since(began)
	if _, err := f.Seek(0, 0); err != nil {
		b.Fatal(err)
	}
	contents, err := snapshot.Verify(f)
	if err != nil {
		b.Fatal(err)
	}
	what := map[bool]string{false: "save", true: "save with the code"}[withCode]
	fmt.Fprintf(os.Stderr, "| %s (%d topologies, %d supervisors) | %v | %.1f MB | %d nodes, %d pieces of code |\n",
		what, *snapshotTopologies, *snapshotSupervisors, took.Round(time.Millisecond), float64(contents.Bytes)/1e6, contents.Nodes, contents.Files)
	b.ReportMetric(took.Seconds(), strings.ReplaceAll(what, " ", "-")+"-s")
	return path
}

func waitPlaced(b *testing.B, conn *zk.Conn, n int) {
	b.Helper()
	if err := testcluster.Poll(5*time.Minute, func() error {
		got, err := placed(conn)
		if err == nil && got < n {
			err = fmt.Errorf("%d of %d topologies placed", got, n)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
}

// assignments reads every assignment's executors and slots, by topology:
// what a supervisor's workers follow (the writer's epoch left out).
func assignments(b *testing.B, conn *zk.Conn) map[string][]byte {
	b.Helper()
	dir := cluster.Paths{Root: scaleRoot}.Assignments()
	ids, _, err := conn.Children(dir)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string][]byte{}
	for _, id := range ids {
		data, _, err := conn.Get(dir + "/" + id)
		if err != nil {
			b.Fatal(err)
		}
		a := new(clusterv1.Assignment)
		if err := cluster.Decode(dir, data, a); err != nil {
			b.Fatal(err)
		}
		a.Epoch = 0
		out[id] = cluster.Encode(a)
	}
	return out
}
