package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A reader that asks what changed since the state it last looked at gets
// the children created, rewritten and deleted since, and nothing else;
// from a state the cache no longer remembers it is told to look at all.
func TestDirCacheChanges(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	dir := s.Paths().Nimbuses()
	if err := cluster.EnsurePath(conn, dir); err != nil {
		t.Fatal(err)
	}
	data := cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 1})
	for i := range 5 {
		if _, err := conn.Create(fmt.Sprintf("%s/n%d", dir, i), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	cache := cluster.NewNimbusInfoCache(s, dir, slog.New(slog.DiscardHandler))
	run(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	<-cache.Loaded()
	if _, _, ok := cache.Changes(0); ok {
		t.Fatal("Changes(0) after the first listing: ok, want a look at everything")
	}
	_, gen, _ := cache.Changes(0)

	// Rewrite one, delete one, create one; wait until the cache shows all three.
	if _, err := conn.Set(dir+"/n1", data, -1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(dir+"/n2", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(dir+"/n9", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, stat, _ := conn.Exists(dir + "/n1")
	if !cache.AwaitChild(ctx, nil, "n9") || !cache.AwaitVersion(ctx, nil, "n1", stat.Version) {
		t.Fatal("the cache never showed the changes")
	}
	if err := testcluster.Poll(10*time.Second, func() error {
		if _, listed := cache.Snapshot()["n2"]; listed {
			return fmt.Errorf("n2 still listed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	changed, now, ok := cache.Changes(gen)
	if got := slices.Sorted(maps.Keys(changed)); !ok || now <= gen || !slices.Equal(got, []string{"n1", "n2", "n9"}) {
		t.Fatalf("Changes(%d) = %v, %d, %v; want [n1 n2 n9], a newer generation, true", gen, got, now, ok)
	}
	if again, then, ok := cache.Changes(now); !ok || then != now || len(again) != 0 {
		t.Fatalf("Changes(now) = %v, %d, %v: want nothing", again, then, ok)
	}
}
