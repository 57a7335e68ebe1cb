package testcluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// quiet drops the client's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// connect opens a client session on servers, closed at the end of the test.
func connect(t *testing.T, servers ...string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(servers, 2*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("connect %v: %v", servers, err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// within runs op and returns its error, or an error if it takes longer than d.
// The op's goroutine ends when its connection is closed.
func within(d time.Duration, op func() error) error {
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("no answer within %v", d)
	}
}

// create makes path with data; a node left by an earlier attempt whose answer
// was lost counts as created.
func create(conn *zk.Conn, path, data string) error {
	_, err := conn.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

func get(t *testing.T, conn *zk.Conn, path string) string {
	t.Helper()
	b, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(b)
}

func TestStandalone(t *testing.T) {
	start := time.Now()
	z := StartZooKeeper(t)
	t.Logf("standalone ready in %v", time.Since(start))
	if mode, err := z.Mode(); err != nil || mode != "standalone" {
		t.Fatalf("Mode() = %q, %v; want standalone", mode, err)
	}

	conn := connect(t, z.Addr())
	if _, err := conn.Create("/a", []byte("one"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if got := get(t, conn, "/a"); got != "one" {
		t.Fatalf("get /a = %q, want one", got)
	}
	conn.Close()

	z.Stop()
	z.Stop() // idempotent
	if _, err := z.Mode(); err == nil {
		t.Fatal("Mode() of a stopped server succeeded")
	}
	start = time.Now()
	z.Start()
	t.Logf("standalone restarted in %v", time.Since(start))
	if got := get(t, connect(t, z.Addr()), "/a"); got != "one" {
		t.Fatalf("after restart get /a = %q, want one", got)
	}
}

func TestEnsemble(t *testing.T) {
	start := time.Now()
	e := StartEnsemble(t, 3)
	t.Logf("ensemble of 3 ready in %v", time.Since(start))

	leader := -1
	for i, z := range e.Servers {
		mode, err := z.Mode()
		if err != nil {
			t.Fatalf("Mode(): %v", err)
		}
		if mode == "leader" {
			if leader >= 0 {
				t.Fatalf("two leaders: %s and %s", e.Servers[leader].Addr(), z.Addr())
			}
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}

	// Written through one server, read through another.
	w, r := e.Servers[leader], e.Servers[(leader+1)%3]
	if err := create(connect(t, w.Addr()), "/x", "through "+w.Addr()); err != nil {
		t.Fatalf("create /x: %v", err)
	}
	reader := connect(t, r.Addr())
	if _, err := reader.Sync("/x"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got, want := get(t, reader, "/x"), "through "+w.Addr(); got != want {
		t.Fatalf("get /x through %s = %q, want %q", r.Addr(), got, want)
	}

	// One server down, the leader: the other two elect one and take writes.
	e.Servers[leader].Stop()
	e.WaitQuorum(t)
	client := connect(t, e.Addrs()...)
	WaitFor(t, 10*time.Second, "a write with one server down", func() error {
		return within(2*time.Second, func() error { return create(client, "/y", "two of three") })
	})
	if got := get(t, client, "/y"); got != "two of three" {
		t.Fatalf("get /y = %q", got)
	}

	// A second server down: the last one stops serving and writes fail.
	second := e.Servers[(leader+1)%3]
	last := e.Servers[(leader+2)%3]
	second.Stop()
	WaitFor(t, 10*time.Second, "the last server to stop serving", func() error {
		if mode, err := last.Mode(); err == nil {
			return fmt.Errorf("%s still serves as %s", last.Addr(), mode)
		}
		return nil
	})
	lost := connect(t, e.Addrs()...)
	if err := within(2*time.Second, func() error { return create(lost, "/z", "one of three") }); err == nil {
		t.Fatal("write without a quorum succeeded")
	}
	lost.Close() // drops the write still queued, if any

	// The second back: quorum and writes return.
	start = time.Now()
	second.Start()
	t.Logf("quorum back in %v", time.Since(start))
	e.WaitQuorum(t)
	WaitFor(t, 10*time.Second, "a write with the quorum back", func() error {
		return within(2*time.Second, func() error { return create(client, "/z", "back") })
	})
	if got := get(t, client, "/z"); got != "back" {
		t.Fatalf("get /z = %q", got)
	}

	// The whole ensemble down and back: data survives.
	for _, z := range e.Servers {
		z.Stop()
	}
	e.StartAll()
	if got := get(t, connect(t, strings.Split(e.ConnectString(), ",")...), "/y"); got != "two of three" {
		t.Fatalf("after restart get /y = %q", got)
	}
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, time.Second, "the third call", func() error {
		if n++; n < 3 {
			return fmt.Errorf("call %d", n)
		}
		return nil
	})
}
