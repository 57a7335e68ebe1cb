package leader_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// The whole root deleted by hand takes every lock node with it: the leader
// must stop at once, its old term must write nothing, and the candidates
// must rebuild the queue and elect again, without anyone creating the
// directory for them.
func TestHostileRootDeletedEndsTermAndElectsAgain(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	old := waitOneLeader(t, cs, 10*time.Second)
	oldTerm := old.election.Current()
	conn := zkConn(t, z.Addr())

	testcluster.DeleteTree(t, conn, "/storm", 10*time.Second)
	testcluster.WaitFor(t, 5*time.Second, "the old term ends", func() error {
		select {
		case <-oldTerm.Done():
			return nil
		default:
			return errors.New("term still live")
		}
	})

	// A new leader, on a new lock node, with both candidates queued.
	newLeader := waitOneLeader(t, cs, 10*time.Second)
	newTerm := newLeader.election.Current()
	if newTerm.Node() == oldTerm.Node() {
		t.Fatalf("new term on the old lock node %s", newTerm.Node())
	}
	testcluster.WaitFor(t, 10*time.Second, "both candidates queued again", func() error {
		children, _, err := conn.Children("/storm/leader-lock")
		if err != nil {
			return err
		}
		if len(children) != 2 {
			return errors.New("want 2 lock nodes")
		}
		return nil
	})

	// Nothing writes through the old term: neither its own end-of-term
	// check nor ZooKeeper's fence on the vanished lock node lets it, even
	// now that the root exists again.
	// The writes below create a distribution; its directory exists, so
	// only the fence can refuse them.
	ops, paths := old.sess.Ops(), old.sess.Paths()
	if err := cluster.EnsurePath(conn, paths.CodeDistributor()); err != nil {
		t.Fatal(err)
	}
	stale := &clusterv1.CodeDistribution{CodeMetaDigest: make([]byte, 32)}
	if _, err := oldTerm.Multi(ops.CreateDistribution("stale-1-1", stale)); !errors.Is(err, leader.ErrFenced) {
		t.Fatalf("write with the old term: err = %v, want ErrFenced", err)
	}
	if _, err := leader.FencedMulti(conn, oldTerm.Node(), ops.CreateDistribution("stale-1-1", stale)); !errors.Is(err, leader.ErrFenced) {
		t.Fatalf("write through the old lock node: err = %v, want ErrFenced", err)
	}
	if ok, _, err := conn.Exists(paths.Distribution("stale-1-1")); err != nil || ok {
		t.Fatalf("stale distribution exists = %v, %v; want not written", ok, err)
	}
	// The new term writes.
	if _, err := newTerm.Multi(ops.CreateDistribution("fresh-1-1", stale)); err != nil {
		t.Fatalf("write with the new term: %v", err)
	}
	if ok, _, err := conn.Exists(paths.Distribution("fresh-1-1")); err != nil || !ok {
		t.Fatalf("fresh distribution exists = %v, %v; want written", ok, err)
	}
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// A persistent node made by hand at the head of the leader queue would
// never go away by itself, and every candidate would wait behind it for
// good: the candidate next in line removes it, and someone leads.
func TestHostilePersistentLockNodeIsRemoved(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	conn := zkConn(t, z.Addr())
	const junk = "/storm/leader-lock/_c_byhand-lock-0000000000"
	for _, p := range []string{"/storm", "/storm/leader-lock", junk} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	waitOneLeader(t, cs, 10*time.Second)
	if ok, _, err := conn.Exists(junk); err != nil || ok {
		t.Fatalf("%s exists = %v, %v; want removed", junk, ok, err)
	}
}
