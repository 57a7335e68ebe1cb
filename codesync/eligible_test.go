package codesync

import (
	"bytes"
	"crypto/sha256"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// TestEligibleNeedsTheCodeOfEveryTopologyItCanRead checks the election's
// gate against a real ZooKeeper, with a cache that has read nothing yet (as
// right after a lock hand-over), so every StormBase is read afresh.
func TestEligibleNeedsTheCodeOfEveryTopologyItCanRead(t *testing.T) {
	sess := zkSession(t)
	if err := sess.EnsureDirs(sess.Paths().Storms()); err != nil {
		t.Fatal(err)
	}
	store, err := codedistributor.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	paths := sess.Paths()
	s := Gate{
		Session: sess, Store: store,
		Storms: cluster.NewDirCache(sess, paths.Storms(), func() *clusterv1.StormBase { return new(clusterv1.StormBase) }, slog.New(slog.DiscardHandler)),
	}
	conn := sess.Conn()
	create := func(id string, data []byte, acl []zk.ACL) {
		t.Helper()
		if _, err := conn.Create(paths.Storm(id), data, 0, acl); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Delete(paths.Storm(id), -1) })
	}
	base := func(status clusterv1.TopologyStatus) []byte {
		return cluster.Encode(&clusterv1.StormBase{Name: "t", Status: status, CodeMetaDigest: bytes.Repeat([]byte{1}, sha256.Size)})
	}
	open := zk.WorldACL(zk.PermAll)

	if err := s.Eligible(); err != nil {
		t.Fatalf("no topologies: %v", err)
	}
	create("junk-1-1", []byte("not a StormBase"), open)
	create("killed-1-1", base(clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED), open)
	if err := s.Eligible(); err != nil {
		t.Fatalf("only garbage and a killed topology: %v, want eligible (neither names code a leader needs)", err)
	}

	// One it cannot read: not knowing what it needs is not holding it.
	create("secret-1-1", base(clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE), zk.DigestACL(zk.PermAll, "someone", "else"))
	if err := s.Eligible(); err == nil || !strings.Contains(err.Error(), "secret-1-1") {
		t.Fatalf("a StormBase it cannot read: %v, want an error naming it", err)
	}
	if err := conn.Delete(paths.Storm("secret-1-1"), -1); err != nil {
		t.Fatal(err)
	}

	create("active-1-1", base(clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE), open)
	if err := s.Eligible(); err == nil || !strings.Contains(err.Error(), "active-1-1") {
		t.Fatalf("an active topology whose code it lacks: %v, want an error naming it", err)
	}
}
