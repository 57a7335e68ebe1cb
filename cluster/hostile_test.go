package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// records is a slog handler that keeps what is logged, for assertions.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// count counts records with message msg whose attribute key (if not "")
// has value val.
func (r *records) count(msg, key, val string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Message != msg {
			continue
		}
		match := key == ""
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key && a.Value.String() == val {
				match = true
			}
			return true
		})
		if match {
			n++
		}
	}
	return n
}

// An empty node parses as an empty message; Decode rejects it, naming the
// node, for every kind of payload, and accepts what the writers write.
func TestDecodeRejectsPayloadsLackingWhatWritersSet(t *testing.T) {
	for _, p := range zkPayloads {
		err := cluster.Decode(p.path, nil, p.new())
		if !errors.Is(err, cluster.ErrInvalidPayload) || !strings.Contains(err.Error(), p.path) {
			t.Errorf("%T from an empty node: %v, want ErrInvalidPayload naming %s", p.seed, err, p.path)
		}
		if err := cluster.Decode(p.path, cluster.Encode(p.seed), p.new()); err != nil {
			t.Errorf("%T as written: %v", p.seed, err)
		}
	}
	bad := &clusterv1.Assignment{CodeMetaDigest: make([]byte, 32), Executors: []*clusterv1.ExecutorAssignment{
		{Executor: &clusterv1.Executor{ComponentId: "c"}, Slot: &clusterv1.Slot{SupervisorId: "s", Port: 0}}}}
	if err := cluster.Decode("/a", cluster.Encode(bad), new(clusterv1.Assignment)); !errors.Is(err, cluster.ErrInvalidPayload) {
		t.Errorf("an assignment to port 0: %v, want ErrInvalidPayload", err)
	}
}

// Garbage written over a readable node keeps its last readable payload in
// the cache, listed as unreadable, until it is readable again; a node that
// never was has a nil payload.
func TestDirCacheKeepsTheLastReadablePayload(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	dir := s.Paths().Nimbuses()
	if err := cluster.EnsurePath(conn, dir); err != nil {
		t.Fatal(err)
	}
	logs := &records{}
	cache := cluster.NewNimbusInfoCache(s, dir, slog.New(logs))
	run(t, func(ctx context.Context) { _ = cache.Run(ctx) })
	if _, err := conn.Create(dir+"/a", cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 1}), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	expect := func(what string, port int32, unreadable bool) {
		t.Helper()
		testcluster.WaitFor(t, 5*time.Second, what, func() error {
			info, ok := cache.Snapshot()["a"]
			if !ok || info.GetPort() != port || cache.Unreadable()["a"] != unreadable {
				return fmt.Errorf("a = %v (present %v), unreadable %v", info, ok, cache.Unreadable())
			}
			return nil
		})
	}
	expect("a readable", 1, false)
	if _, err := conn.Set(dir+"/a", []byte{0xff, 0xfe}, -1); err != nil {
		t.Fatal(err)
	}
	expect("a's last readable payload kept", 1, true)
	if n := logs.count("unreadable node; keeping its last readable payload", "path", dir+"/a"); n != 1 {
		t.Errorf("%d log lines naming the garbage, want 1", n)
	}
	if _, err := conn.Set(dir+"/a", cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 2}), -1); err != nil {
		t.Fatal(err)
	}
	expect("a readable again", 2, false)
	if _, err := conn.Create(dir+"/b", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "b, never readable, present with a nil payload", func() error {
		if info, ok := cache.Snapshot()["b"]; !ok || info != nil || !cache.Unreadable()["b"] {
			return fmt.Errorf("b = %v (present %v)", info, ok)
		}
		return nil
	})

	// A node whose ACL denies reading is unreadable for good, like garbage:
	// it must not stop the cache from publishing what else changes.
	if _, err := conn.Create(dir+"/c", cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 3}), 0, zk.DigestACL(zk.PermAll, "someone", "else")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(dir+"/a", cluster.Encode(&clusterv1.NimbusInfo{Host: "h", Port: 4}), -1); err != nil {
		t.Fatal(err)
	}
	expect("a's change published beside a node it may not read", 4, false)
	testcluster.WaitFor(t, 5*time.Second, "c, unreadable, present with a nil payload", func() error {
		if info, ok := cache.Snapshot()["c"]; !ok || info != nil || !cache.Unreadable()["c"] {
			return fmt.Errorf("c = %v (present %v)", info, ok)
		}
		return nil
	})
}

// A deleted root: each cache told to re-creates its directory, and the
// process reports the root once, at error level, by name.
func TestDeletedRootIsReportedOnceAndDirectoriesRecreated(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	paths := s.Paths()
	if err := s.EnsureDirs(paths.Storms(), paths.Assignments()); err != nil {
		t.Fatal(err)
	}
	logs := &records{}
	log := slog.New(logs)
	storms := cluster.NewDirCache(s, paths.Storms(), func() *clusterv1.StormBase { return new(clusterv1.StormBase) }, log).Recreate()
	assignments := cluster.NewDirCache(s, paths.Assignments(), func() *clusterv1.Assignment { return new(clusterv1.Assignment) }, log).Recreate()
	for _, c := range []interface{ Run(context.Context) error }{storms, assignments} {
		run(t, func(ctx context.Context) { _ = c.Run(ctx) })
	}
	testcluster.WaitFor(t, 5*time.Second, "caches loaded", func() error {
		for _, ch := range []<-chan struct{}{storms.Loaded(), assignments.Loaded()} {
			select {
			case <-ch:
			default:
				return errors.New("not loaded")
			}
		}
		return nil
	})

	testcluster.DeleteTree(t, conn, "/storm", 5*time.Second)
	testcluster.WaitFor(t, 5*time.Second, "both directories re-created", func() error {
		for _, dir := range []string{paths.Storms(), paths.Assignments()} {
			if ok, _, err := conn.Exists(dir); err != nil || !ok {
				return fmt.Errorf("%s: exists %v, %v", dir, ok, err)
			}
		}
		return nil
	})
	const rootMsg = "ZooKeeper root was deleted: its topologies and assignments are gone; re-creating this daemon's nodes"
	testcluster.WaitFor(t, 5*time.Second, "the root reported", func() error {
		if n := logs.count(rootMsg, "root", "/storm"); n != 1 {
			return fmt.Errorf("%d reports", n)
		}
		return nil
	})
	// The caches follow the new directories.
	if _, err := conn.Create(paths.Storm("t-1-1"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the cache follows the new directory", func() error {
		if _, ok := storms.Snapshot()["t-1-1"]; !ok {
			return errors.New("t-1-1 not listed")
		}
		return nil
	})
	if n := logs.count(rootMsg, "", ""); n != 1 {
		t.Fatalf("the root reported %d times, want once", n)
	}
}

// Data someone else writes into a node is put back, unless the owner
// writes it itself (a heartbeat): then its changes are left alone and do
// not count as re-creations. A supervisor's heartbeat once re-triggered
// itself through Ready: hundreds of writes a second.
func TestKeepPutsDataBackAndLeavesTheOwnersWritesAlone(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn := s.Conn()
	paths := s.Paths()
	if err := s.EnsureDirs(paths.Nimbuses(), paths.Supervisors()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	static := paths.Nimbus("h:1")
	run(t, func(ctx context.Context) {
		cluster.KeepEphemeral(ctx, s, static, []byte("mine"), log, nil)
	})
	var created atomic.Int32
	beat := paths.Supervisor("sup-1")
	// Already there and ours, as after a create whose answer was lost: it
	// counts as established.
	if _, err := conn.Create(beat, []byte("beat-0"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	lost := make(chan struct{}, 1)
	run(t, func(ctx context.Context) {
		cluster.EphemeralNode{Path: beat, Data: []byte("beat-0"), OwnerWrites: true, RecreateParent: true, Lost: lost,
			Ready: func() { created.Add(1) }}.Keep(ctx, s, log)
	})
	holds := func(p, want string) func() error {
		return func() error {
			data, _, err := conn.Get(p)
			if err != nil {
				return err
			}
			if string(data) != want {
				return fmt.Errorf("%s holds %q, want %q", p, data, want)
			}
			return nil
		}
	}
	testcluster.WaitFor(t, 5*time.Second, "both nodes created, the heartbeat's established", func() error {
		if err := holds(static, "mine")(); err != nil {
			return err
		}
		if created.Load() != 1 {
			return fmt.Errorf("Ready called %d times", created.Load())
		}
		return holds(beat, "beat-0")()
	})

	if _, err := conn.Set(static, []byte{0xff}, -1); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the static node's data put back", holds(static, "mine"))

	for i := 1; i <= 20; i++ {
		if _, err := conn.Set(beat, []byte(fmt.Sprintf("beat-%d", i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	testcluster.WaitFor(t, 5*time.Second, "the owner's last write kept", holds(beat, "beat-20"))
	_, stat, err := conn.Get(beat)
	if err != nil {
		t.Fatal(err)
	}
	if stat.Version != 20 || created.Load() != 1 {
		t.Fatalf("after 20 writes by the owner: version %d, Ready called %d times; want 20 and 1", stat.Version, created.Load())
	}

	// Deleted with its directory, which the owner's next write finds: both
	// re-created, Ready called again.
	testcluster.DeleteTree(t, conn, paths.Supervisors(), 5*time.Second)
	lost <- struct{}{}
	// Ready follows the create, so wait for both rather than read the count
	// the moment the node appears.
	testcluster.WaitFor(t, 5*time.Second, "the node and its directory re-created, Ready called again", func() error {
		if err := holds(beat, "beat-0")(); err != nil {
			return err
		}
		if n := created.Load(); n != 2 {
			return fmt.Errorf("Ready called %d times, want 2", n)
		}
		return nil
	})
}
