package integration

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Every nimbus loses its disk while supervisors run a topology, first as a
// restart on an empty disk, then while running. The nimbuses get the code
// back from the supervisors, verified against the digest in ZooKeeper, and
// lead again; nobody touches ZooKeeper, and no worker restarts.
func TestCodeRecoveredFromSupervisors(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	// A grace of 1 s: code a supervisor holds must never be marked LOST.
	args := testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--topology.min.replication.count", "2",
		"--nimbus.code.lost.grace.secs", "1")
	ps := c.StartNimbuses(t, 2, args)
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 2)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "phoenix", 2)
	before := waitWorkers(t, conn, id, 2, 30*time.Second, sups...)
	base, _ := stormBase(t, conn, id)
	_, stormBefore, err := conn.Get("/storm/storms/" + id)
	if err != nil {
		t.Fatal(err)
	}

	// Every nimbus dies and comes back on the same port with an empty disk.
	var back []*testcluster.Process
	for _, p := range ps {
		if err := p.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(p.LocalDir); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, p := range ps {
		q, err := c.StartNimbus(args, testcluster.WithLocalDir(p.LocalDir), testcluster.WithPort(portOf(t, p)))
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, q)
	}
	_, leader := c.WaitLeader(t, back, 30*time.Second)
	t.Logf("a leader %v after the nimbuses restarted with empty disks", time.Since(start).Round(time.Millisecond))

	// The recovered copy is the submitted code, verified by the store.
	want, err := os.ReadFile(testcluster.Bin(t).Path("wordcount"))
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "every nimbus holding the code", func() error {
		for _, p := range back {
			if err := holds(p, id, want); err != nil {
				return err
			}
		}
		return nil
	})
	verifyStore(t, leader, id, base.GetCodeMetaDigest(), want)

	// Where from, in the summary and in stormctl cluster.
	supIDs := map[string]bool{sups[0].ID(): true, sups[1].ID(): true}
	var from string
	for _, tp := range clusterSummary(t, c, leader).GetTopologies() {
		if tp.GetId() == id {
			from = tp.GetRecoveredFrom()
		}
	}
	if !strings.HasPrefix(from, "supervisor ") || !supIDs[strings.Fields(from)[1]] {
		t.Fatalf("recovered_from = %q, want one of the supervisors", from)
	}
	out, _, code := stormctl(t, "--seeds", strings.Join(testcluster.Addrs(back...), ","), "cluster")
	if code != 0 || !strings.Contains(out, "code of phoenix ("+id+") recovered from supervisor ") {
		t.Fatalf("stormctl cluster (exit %d) does not say where the code came from:\n%s", code, out)
	}

	// Then every running nimbus, the leader too, loses all its code at
	// once, behind its back: each notices and fetches it again, from a
	// supervisor or from a nimbus that already has.
	for _, p := range back {
		dir := filepath.Join(p.LocalDir, "nimbus", "code")
		if err := holds(p, id, want); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	start = time.Now()
	testcluster.WaitFor(t, 20*time.Second, "every running nimbus holding the code again after the wipe", func() error {
		for _, p := range back {
			if err := holds(p, id, want); err != nil {
				return err
			}
		}
		return nil
	})
	t.Logf("every running nimbus held the code again %v after all of it was wiped", time.Since(start).Round(time.Millisecond))
	_, leader = c.WaitLeader(t, back, 10*time.Second)
	verifyStore(t, leader, id, base.GetCodeMetaDigest(), want)

	// Nobody wrote the StormBase or marked it LOST; the workers never
	// stopped.
	for _, p := range back {
		if strings.Contains(logText(t, p), "topology marked LOST") {
			t.Fatalf("%s marked the topology LOST although supervisors hold its code", p.Name)
		}
	}
	_, stormAfter, err := conn.Get("/storm/storms/" + id)
	if err != nil {
		t.Fatal(err)
	}
	if stormAfter.Mzxid != stormBefore.Mzxid {
		t.Fatalf("the StormBase was rewritten during recovery (mzxid %d → %d)", stormBefore.Mzxid, stormAfter.Mzxid)
	}
	after, err := runningWorkers(t, conn, id, sups...)
	if err != nil {
		t.Fatal(err)
	}
	for port, pid := range before {
		if after[port] != pid {
			t.Fatalf("worker on %d was pid %d, now %d: restarted during recovery", port, pid, after[port])
		}
	}
}

// verifyStore checks p's copy of id as the nimbus does: every file against
// the meta, the meta against digest, the one ZooKeeper records.
func verifyStore(t *testing.T, p *testcluster.Process, id string, digest, artifact []byte) {
	t.Helper()
	store, err := codedistributor.OpenStore(filepath.Join(p.LocalDir, "nimbus"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Verify(id, digest); err != nil {
		t.Fatalf("%s: the recovered copy does not verify: %v", p.Name, err)
	}
	got, err := os.ReadFile(filepath.Join(store.Dir(id), codedistributor.ArtifactFile))
	if err != nil || sha256.Sum256(got) != sha256.Sum256(artifact) {
		t.Fatalf("%s: the recovered artifact differs (%v)", p.Name, err)
	}
}

func portOf(t *testing.T, p *testcluster.Process) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(p.Addr()[strings.LastIndex(p.Addr(), ":")+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	return port
}

// A supervisor keeps the code of a live topology that moved away from it,
// until the topology is killed: its copy may be the only one left if every
// nimbus loses its code before the topology's new supervisors fetch it
// (the 1,000-fault chaos run lost five topologies that way).
func TestSupervisorKeepsCodeOfALiveTopologyMovedAway(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 2)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	id := submitExample(t, cl, "wanderer", 1)
	waitWorkers(t, conn, id, 1, 30*time.Second, sups...)
	from, to := sups[0], sups[1]
	if w, err := runningWorkers(t, conn, id, from); err != nil || len(w) == 0 {
		from, to = to, from
	}
	base, _ := stormBase(t, conn, id)

	// The supervisor running it stops; the leader moves the topology to
	// the other one.
	if err := from.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitWorkers(t, conn, id, 1, 30*time.Second, to)

	// It comes back to find the topology placed elsewhere, and the code of
	// one the cluster no longer has: that one goes, the moved one stays.
	code := filepath.Join(from.LocalDir, "supervisor", "code")
	gone := "ghost-1-1700000000"
	if err := os.CopyFS(filepath.Join(code, gone), os.DirFS(filepath.Join(code, id))); err != nil {
		t.Fatal(err)
	}
	back, err := c.StartSupervisor(testcluster.WithLocalDir(from.LocalDir))
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the code of a topology the cluster no longer has removed", func() error {
		return absent(back, code, gone)
	})
	store, err := codedistributor.OpenStore(filepath.Join(from.LocalDir, "supervisor"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Verify(id, base.GetCodeMetaDigest()); err != nil {
		t.Fatalf("%s dropped the code of a live topology moved away from it: %v", back.Name, err)
	}
	if w, err := runningWorkers(t, conn, id, back); err != nil || len(w) != 0 {
		t.Fatalf("%s runs %v (%v), want nothing: the topology moved away", back.Name, w, err)
	}

	// Killed, it goes.
	zero := int32(0)
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "wanderer", WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the killed topology's code removed", func() error {
		return absent(back, code, id)
	})
}

// absent says whether p's code dir holds no copy of topology id.
func absent(p *testcluster.Process, code, id string) error {
	if _, err := os.Stat(filepath.Join(code, id)); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s still holds %s (%v)", p.Name, id, err)
	}
	return nil
}
