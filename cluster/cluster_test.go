package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func connect(t *testing.T, addr string) *cluster.Session {
	t.Helper()
	s, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{addr}, SessionTimeout: 4 * time.Second, Root: "/storm",
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// run runs f until the test ends.
func run(t *testing.T, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestDirCacheFollowsChildrenAndData(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	dir := s.Paths().Nimbuses()
	cache := cluster.NewNimbusInfoCache(s, dir, slog.New(slog.DiscardHandler))
	run(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	testcluster.WaitFor(t, 5*time.Second, "cache loaded", func() error {
		select {
		case <-cache.Loaded():
			return nil
		default:
			return errors.New("not loaded")
		}
	})

	// The directory does not exist yet: the cache reads it as empty, and
	// never creates it; it follows it once someone does.
	if ok, _, _ := conn.Exists(dir); ok {
		t.Fatal("the cache created its directory")
	}
	if err := cluster.EnsurePath(conn, dir); err != nil {
		t.Fatal(err)
	}

	put := func(name string, port int32) {
		t.Helper()
		data := cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: port})
		if _, err := conn.Create(dir+"/"+name, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(what string, want map[string]int32) {
		t.Helper()
		testcluster.WaitFor(t, 5*time.Second, what, func() error {
			snap := cache.Snapshot()
			if len(snap) != len(want) {
				return fmt.Errorf("snapshot %v, want %v", snap, want)
			}
			for name, port := range want {
				info, ok := snap[name]
				if !ok {
					return fmt.Errorf("%s missing", name)
				}
				if port < 0 {
					if info != nil {
						return fmt.Errorf("%s: %v, want nil for undecodable", name, info)
					}
				} else if info.GetPort() != port {
					return fmt.Errorf("%s: port %d, want %d", name, info.GetPort(), port)
				}
			}
			return nil
		})
	}

	put("a", 1)
	put("b", 2)
	expect("two children", map[string]int32{"a": 1, "b": 2})

	if _, err := conn.Set(dir+"/a", cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 11}), -1); err != nil {
		t.Fatal(err)
	}
	expect("data change", map[string]int32{"a": 11, "b": 2})

	// Deleted and re-created under the same name, as a restarted nimbus
	// does: the new payload shows.
	if err := conn.Delete(dir+"/b", -1); err != nil {
		t.Fatal(err)
	}
	put("b", 22)
	expect("re-created child", map[string]int32{"a": 11, "b": 22})

	// Garbage is kept with a nil payload, never fatal.
	if _, err := conn.Create(dir+"/junk", []byte{0xff, 0xff, 0xff}, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	expect("undecodable child", map[string]int32{"a": 11, "b": 22, "junk": -1})

	if err := conn.Delete(dir+"/a", -1); err != nil {
		t.Fatal(err)
	}
	expect("deletion", map[string]int32{"b": 22, "junk": -1})
}

func TestKeepEphemeralReplacesAStaleNodeAndRecreatesADeletedOne(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	old := connect(t, z.Addr())
	s := connect(t, z.Addr())
	p := s.Paths().Nimbus("127.0.0.1:6627")
	// A previous run's node, owned by a session that is still alive.
	if err := cluster.EnsurePath(old.Conn(), s.Paths().Nimbuses()); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Conn().Create(p, []byte("old"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	run(t, func(ctx context.Context) {
		cluster.KeepEphemeral(ctx, s, p, []byte("new"), slog.New(slog.DiscardHandler), nil)
	})
	_, sid, _ := s.State()
	owned := func() error {
		data, stat, err := s.Conn().Get(p)
		if err != nil {
			return err
		}
		if stat.EphemeralOwner != sid || string(data) != "new" {
			return fmt.Errorf("node %q owned by %#x, want ours (%#x)", data, stat.EphemeralOwner, sid)
		}
		return nil
	}
	testcluster.WaitFor(t, 5*time.Second, "the stale node replaced", owned)

	if err := old.Conn().Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the node deleted by hand re-created", owned)
}

func TestLockOrder(t *testing.T) {
	names := []string{"_c_b-lock-0000000010", "junk", "_c_a-lock-0000000002", "lock-0000000007"}
	got := cluster.LockOrder(names)
	want := []int64{2, 7, 10}
	if len(got) != len(want) {
		t.Fatalf("LockOrder = %v", got)
	}
	for i, e := range got {
		if e.Seq != want[i] || e.Epoch() != want[i]+1 {
			t.Fatalf("entry %d = %+v, want seq %d", i, e, want[i])
		}
	}
	q := cluster.Queue(map[string]*clusterv1.NimbusInfo{"_c_x-lock-0000000003": nil, "_c_y-lock-0000000004": {Host: "y"}})
	if q[0].Info != nil || q[1].Info.GetHost() != "y" {
		t.Fatalf("Queue keeps unknown payloads as nil in order: %v", q)
	}
}

func TestLockSeqRejectsMalformedNames(t *testing.T) {
	for _, name := range []string{"lock-", "lock-x1", "abc", "lock--1"} {
		if _, err := cluster.LockSeq(name); err == nil {
			t.Errorf("LockSeq(%q) succeeded", name)
		}
	}
}
