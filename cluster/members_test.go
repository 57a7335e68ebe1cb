package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A MembersOnly cache follows which children exist and reads a payload
// when its child appears, is replaced, or Refresh asks; an owner rewriting
// its node (a heartbeat) costs it nothing. Hundreds of children load
// through pipelined reads.
func TestDirCacheMembersOnly(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	dir := s.Paths().Supervisors()
	if err := s.EnsureDirs(dir); err != nil {
		t.Fatal(err)
	}
	info := func(host string) []byte {
		return cluster.Encode(&clusterv1.SupervisorInfo{SupervisorId: "x", Host: host, SlotPorts: []int32{1}})
	}
	const n = 500
	var ops []any
	for i := range n {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/s%03d", dir, i), Data: info("h0"), Acl: zk.WorldACL(zk.PermAll)})
	}
	if _, err := conn.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	cache := cluster.NewDirCache(s, dir, func() *clusterv1.SupervisorInfo { return new(clusterv1.SupervisorInfo) },
		slog.New(slog.DiscardHandler)).MembersOnly()
	run(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	host := func(name string) string { return cache.Snapshot()[name].GetHost() }
	testcluster.WaitFor(t, 10*time.Second, "every child loaded", func() error {
		snap := cache.Snapshot()
		if len(snap) != n {
			return fmt.Errorf("%d children", len(snap))
		}
		for name, m := range snap {
			if m.GetHost() != "h0" {
				return fmt.Errorf("%s: host %q", name, m.GetHost())
			}
		}
		return nil
	})

	// A rewrite is not read: the marker created after it shows, the
	// rewritten payload does not.
	if _, err := conn.Set(dir+"/s000", info("h1"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(dir+"/marker", info("m"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the marker listed", func() error {
		if host("marker") != "m" {
			return fmt.Errorf("marker: %q", host("marker"))
		}
		return nil
	})
	if got := host("s000"); got != "h0" {
		t.Fatalf("s000 read again after its owner rewrote it: %q", got)
	}

	// Replaced in one step, so no listing can see it gone: the directory's
	// change count gives it away, and it is read again.
	if _, err := conn.Multi(&zk.DeleteRequest{Path: dir + "/s001", Version: -1},
		&zk.CreateRequest{Path: dir + "/s001", Data: info("h2"), Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the replaced child read again", func() error {
		if got := host("s001"); got != "h2" {
			return fmt.Errorf("s001: %q", got)
		}
		return nil
	})

	// Refresh reads every payload again.
	cache.Refresh()
	testcluster.WaitFor(t, 5*time.Second, "the rewrite read on Refresh", func() error {
		if got := host("s000"); got != "h1" {
			return fmt.Errorf("s000: %q", got)
		}
		return nil
	})
}
