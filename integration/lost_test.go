package integration

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A StormBase whose code exists nowhere (67 bytes written by hand) would
// keep every nimbus out of the leader queue. After
// nimbus.code.lost.grace.secs it is marked LOST: a leader returns, list,
// cluster and the metrics say LOST, and admin forget removes it, also when
// no nimbus leads.
func TestGhostTopologyIsMarkedLostAndForgotten(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	p := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.code.lost.grace.secs", "2"))[0]
	c.WaitLeader(t, []*testcluster.Process{p}, 10*time.Second)
	keeper := submit(t, newClient(t, c, p), "keeper", randomBytes(t, 1000)).GetTopologyId()
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	seeds := []string{"--seeds", p.Addr()}

	ghost := writeGhost(t, conn, "ghost")
	testcluster.WaitFor(t, 30*time.Second, "the ghost marked LOST and a leader again", func() error {
		cs := clusterSummary(t, c, p)
		if !slices.Equal(cs.GetLostTopologies(), []string{ghost}) || len(cs.GetLeadershipBlockedBy()) > 0 {
			return fmt.Errorf("lost %v, blocked by %v", cs.GetLostTopologies(), cs.GetLeadershipBlockedBy())
		}
		if n := cs.GetNimbuses(); len(n) != 1 || !n[0].GetIsLeader() {
			return fmt.Errorf("no leader: %v", n)
		}
		return nil
	})
	if out, _, code := stormctl(t, append(seeds, "list")...); code != 0 || !strings.Contains(out, "LOST (no nimbus and no supervisor has held its code") {
		t.Fatalf("stormctl list (exit %d) does not show the ghost LOST:\n%s", code, out)
	}
	if out, _, code := stormctl(t, append(seeds, "cluster")...); code != 0 || !strings.Contains(out, "LOST: ghost ("+ghost+")") {
		t.Fatalf("stormctl cluster (exit %d) does not show the ghost LOST:\n%s", code, out)
	}
	if m, err := p.Metrics(); err != nil || !strings.Contains(m, "\nnimbus_topologies_lost 1\n") {
		t.Fatalf("nimbus_topologies_lost is not 1 (%v)", err)
	}
	if code, body, err := httpGet(p.UIURL()+"/api/v1/topology/summary", nil); err != nil || code != 200 ||
		!strings.Contains(body, `"lostReason":"no nimbus and no supervisor has held its code`) {
		t.Fatalf("the REST API does not show the ghost LOST: %d %v\n%s", code, err, body)
	}
	_, errOut, code := stormctl(t, append(seeds, "admin", "forget", "keeper")...)
	if code == 0 || !strings.Contains(errOut, "is not LOST") {
		t.Fatalf("admin forget of a topology that is not LOST: exit %d, %q", code, errOut)
	}

	// No leader: the nimbus comes back with marking off, and a second
	// ghost that nobody marks keeps it out of the queue.
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p, err := c.StartNimbus(testcluster.WithLocalDir(p.LocalDir), testcluster.WithPort(portOf(t, p)),
		testcluster.WithArgs("--nimbus.code.lost.grace.secs", "-1"))
	if err != nil {
		t.Fatal(err)
	}
	blocker := writeGhost(t, conn, "blocker")
	testcluster.WaitFor(t, 20*time.Second, "no leader, blocked by the second ghost", func() error {
		cs := clusterSummary(t, c, p)
		if !slices.Equal(cs.GetLeadershipBlockedBy(), []string{blocker}) || cs.GetNimbuses()[0].GetIsLeader() {
			return fmt.Errorf("blocked by %v, nimbuses %v", cs.GetLeadershipBlockedBy(), cs.GetNimbuses())
		}
		return nil
	})
	// The ghost has an assignment (the first leader scheduled it before
	// the mark, or it is written here, just before the forget, where the
	// nimbus's cache may not have seen it): forget reads it afresh and
	// removes it.
	base, _ := stormBase(t, conn, ghost)
	a := &clusterv1.Assignment{CodeMetaDigest: base.GetCodeMetaDigest()}
	if _, err := conn.Create("/storm/assignments/"+ghost, cluster.Encode(a), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	out, errOut, code := stormctl(t, append(seeds, "admin", "forget", "ghost", "--reason", "disk lost in the 2026 flood")...)
	if code != 0 || !strings.Contains(out, "forgot ghost ("+ghost+"), without a leader's fence") {
		t.Fatalf("admin forget without a leader: exit %d, %q %q", code, out, errOut)
	}
	for _, path := range []string{"/storm/storms/" + ghost, "/storm/lost/" + ghost, "/storm/assignments/" + ghost} {
		if ok, _, err := conn.Exists(path); err != nil || ok {
			t.Fatalf("%s still exists after forget (%v)", path, err)
		}
	}
	if _, _, code := stormctl(t, append(seeds, "admin", "forget", "blocker")...); code == 0 {
		t.Fatal("admin forget of an unmarked ghost succeeded")
	}
	if ok, _, err := conn.Exists("/storm/storms/" + keeper); err != nil || !ok {
		t.Fatalf("keeper is gone (%v)", err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the forget audited", func() error {
		if log := logText(t, p); !strings.Contains(log, `"action":"forget"`) || !strings.Contains(log, "disk lost in the 2026 flood") {
			return fmt.Errorf("no audit line and reason for the forget")
		}
		return nil
	})
}

// writeGhost writes, by hand, an ACTIVE StormBase for code that exists
// nowhere, and returns its id.
func writeGhost(t *testing.T, conn *zk.Conn, name string) string {
	t.Helper()
	digest := make([]byte, 32)
	if _, err := rand.Read(digest); err != nil {
		t.Fatal(err)
	}
	id := name + "-1-" + strconv.FormatInt(time.Now().Unix(), 10)
	base := &clusterv1.StormBase{Name: name, Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, NumWorkers: 1,
		CodeMetaDigest: digest, LaunchTimeUnixSecs: time.Now().Unix(), Owner: "nobody"}
	if _, err := conn.Create("/storm/storms/"+id, cluster.Encode(base), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return id
}

// A topology whose every copy is gone (no supervisor ran it, every nimbus
// lost its disk) is marked LOST after the grace, and a leader returns; once
// a nimbus holds its code again (a backup put back), the mark lifts by
// itself and the topology is a topology like any other.
func TestLostTopologyIsUnmarkedWhenItsCodeComesBack(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	args := testcluster.WithArgs("--nimbus.code.lost.grace.secs", "2", "--nimbus.code.sync.freq.secs", "1")
	p := c.StartNimbuses(t, 1, args)[0]
	c.WaitLeader(t, []*testcluster.Process{p}, 10*time.Second)
	id := submit(t, newClient(t, c, p), "orphan", randomBytes(t, 1000)).GetTopologyId()
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())

	// The only copy goes: the nimbus restarts on an empty disk, the bundle
	// kept aside.
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(p.LocalDir, "nimbus", "code", id)
	backup := filepath.Join(t.TempDir(), id)
	if err := os.Rename(bundle, backup); err != nil {
		t.Fatal(err)
	}
	p, err := c.StartNimbus(testcluster.WithLocalDir(p.LocalDir), testcluster.WithPort(portOf(t, p)), args)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "the topology marked LOST and a leader again", func() error {
		cs := clusterSummary(t, c, p)
		if !slices.Equal(cs.GetLostTopologies(), []string{id}) || !cs.GetNimbuses()[0].GetIsLeader() {
			return fmt.Errorf("lost %v, nimbuses %v", cs.GetLostTopologies(), cs.GetNimbuses())
		}
		return nil
	})

	// The backup put back: the nimbus finds it, verified, and lifts the mark.
	if err := os.Rename(backup, bundle); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "the mark lifted and the code replicated", func() error {
		if ok, _, err := conn.Exists(cluster.Paths{Root: c.Root}.Lost(id)); err != nil || ok {
			return fmt.Errorf("/lost/%s still there (%v)", id, err)
		}
		cs := clusterSummary(t, c, p)
		for _, ts := range cs.GetTopologies() {
			if ts.GetId() == id && (ts.GetLostReason() != "" || ts.GetReplicationCount() != 1) {
				return fmt.Errorf("%s: lost %q, %d replicas", id, ts.GetLostReason(), ts.GetReplicationCount())
			}
		}
		if len(cs.GetLostTopologies()) > 0 || !cs.GetNimbuses()[0].GetIsLeader() {
			return fmt.Errorf("lost %v, nimbuses %v", cs.GetLostTopologies(), cs.GetNimbuses())
		}
		return nil
	})
}
