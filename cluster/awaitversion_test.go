package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/notify"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
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

	// A version never written: false on the wait's own budget, the
	// deadline less Call's margin (100 ms of a second). The context is
	// never done and stop closes only 10 s on, so nothing else ends the
	// wait in time; a timer never fires early, so the budget is honoured
	// if it took at least 900 ms.
	start := time.Now()
	stop := make(chan struct{})
	watchdog := time.AfterFunc(10*time.Second, func() { close(stop) })
	defer watchdog.Stop()
	if cache.AwaitVersion(deadlineOnly(start.Add(time.Second)), stop, "a", 1000) {
		t.Fatal("AwaitVersion of a version never written returned true")
	}
	if took := time.Since(start); took < 900*time.Millisecond || notify.Closed(stop) {
		t.Fatalf("AwaitVersion of a version never written gave up after %v; want its budget, 900 ms, not the watchdog's 10 s", took)
	}

	// Deleted after the write: seen.
	if err := conn.Delete(dir+"/a", -1); err != nil {
		t.Fatal(err)
	}
	if !cache.AwaitVersion(ctx, nil, "a", 1000) {
		t.Fatal("AwaitVersion of a deleted child: not seen")
	}
}

// AwaitVersions waits until the cache is as new as a listing the caller
// made (its Stat and its children's versions). A child deleted after the
// listing is not waited for; a child created, or a version written, that
// the cache has not seen is. The cache is held back by stopping its Run,
// so what it has not seen is certain, not a race with its watches.
func TestDirCacheAwaitVersions(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	dir := s.Paths().Nimbuses()
	if err := cluster.EnsurePath(conn, dir); err != nil {
		t.Fatal(err)
	}
	data := cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 1})
	for _, name := range []string{"a", "b"} {
		if _, err := conn.Create(dir+"/"+name, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	cache := cluster.NewNimbusInfoCache(s, dir, slog.New(slog.DiscardHandler))
	stopCache := runStoppable(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	// listing lists dir as catchUp does: the Stat, then each child's version.
	listing := func() (*zk.Stat, map[string]int32) {
		t.Helper()
		names, stat, err := conn.Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int32{}
		for _, name := range names {
			if ok, st, err := conn.Exists(dir + "/" + name); err != nil {
				t.Fatal(err)
			} else if ok {
				want[name] = st.Version
			}
		}
		return stat, want
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	stat, want := listing()
	if !cache.AwaitVersions(ctx, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v) of a listing the cache can catch up with: false", want)
	}

	// Deleted after the listing, and the cache has seen it go: done at
	// once, not at the deadline.
	stat, want = listing()
	if err := conn.Delete(dir+"/a", -1); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the cache to drop a", func() error {
		if _, ok := cache.Snapshot()["a"]; ok {
			return fmt.Errorf("still lists a")
		}
		return nil
	})
	if !cache.AwaitVersions(ctx, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v) waited for a, deleted after the listing", want)
	}

	// Created after the cache stopped, and listed: waited for until the
	// cache runs again and lists it.
	stopCache()
	if _, err := conn.Create(dir+"/c", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	stat, want = listing()
	short, cancelShort := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancelShort()
	if cache.AwaitVersions(short, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v): true, but the cache never listed c", want)
	}
	stopCache = runStoppable(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	if !cache.AwaitVersions(ctx, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v): c never seen", want)
	}

	// A newer version of b, the same children: waited for too.
	stopCache()
	if _, err := conn.Set(dir+"/b", data, -1); err != nil {
		t.Fatal(err)
	}
	stat, want = listing()
	short, cancelShort = context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancelShort()
	if cache.AwaitVersions(short, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v): true, but the cache never read b's version", want)
	}
	runStoppable(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	if !cache.AwaitVersions(ctx, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v): b's version never seen", want)
	}

	// The directory deleted and created again after the listing: a cache
	// that lists the new one is newer, although it holds b at a lower
	// version (a new node) and not c.
	stat, want = listing()
	for name := range want {
		if err := conn.Delete(dir+"/"+name, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Delete(dir, -1); err != nil {
		t.Fatal(err)
	}
	if err := cluster.EnsurePath(conn, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(dir+"/b", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	newStat, newWant := listing()
	if !cache.AwaitVersions(ctx, nil, cluster.ListingOf(newStat, newWant)) { // the cache lists the new directory
		t.Fatalf("AwaitVersions(%v) of the re-created directory: false", newWant)
	}
	if !cache.AwaitVersions(ctx, nil, cluster.ListingOf(stat, want)) {
		t.Fatalf("AwaitVersions(%v) of the directory before it was re-created: false", want)
	}
}

// runStoppable runs f until the returned stop is called or the test ends;
// stop returns once f has.
func runStoppable(t *testing.T, f func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// deadlineOnly is a context with deadline d that is never done: a wait
// under it that ends, ended on its own budget (Call's margin before d),
// not on the context.
func deadlineOnly(d time.Time) context.Context { return deadlineCtx{context.Background(), d} }

type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
