package cluster_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A cache keeps each child's data version: AwaitVersion returns once the
// cache has read the version a write left, gives up at the deadline's
// budget for a version never written, and counts a deleted child as seen.
func TestDirCacheAwaitVersion(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	dir := s.Paths().Nimbuses()
	if err := cluster.EnsurePath(conn, dir); err != nil {
		t.Fatal(err)
	}
	cache := cluster.NewNimbusInfoCache(s, dir, slog.New(slog.DiscardHandler))
	run(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	data := cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 1})
	if _, err := conn.Create(dir+"/a", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if !cache.AwaitChild(ctx, nil, "a") {
		t.Fatal("AwaitChild: the created child never listed")
	}

	// Each write's version is awaited and then held.
	for range 20 {
		stat, err := conn.Set(dir+"/a", data, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !cache.AwaitVersion(ctx, nil, "a", stat.Version) {
			t.Fatalf("AwaitVersion(%d): not seen", stat.Version)
		}
		if v, ok := cache.Version("a"); !ok || v < stat.Version {
			t.Fatalf("Version = %d, %v after AwaitVersion(%d)", v, ok, stat.Version)
		}
	}

	// A version never written: false at the budget, before the deadline.
	short, cancelShort := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	if cache.AwaitVersion(short, nil, "a", 1000) {
		t.Fatal("AwaitVersion of a version never written returned true")
	}
	if took := time.Since(start); took >= 300*time.Millisecond {
		t.Fatalf("AwaitVersion gave up after %v, at or past the deadline", took)
	}

	// Deleted after the write: seen.
	if err := conn.Delete(dir+"/a", -1); err != nil {
		t.Fatal(err)
	}
	if !cache.AwaitVersion(ctx, nil, "a", 1000) {
		t.Fatal("AwaitVersion of a deleted child: not seen")
	}
}
