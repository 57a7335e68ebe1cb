package depose_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/depose"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func TestProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	defer ln.Close()
	for addr, want := range map[string]depose.Evidence{
		open:                     depose.Alive,
		refused:                  depose.Dead,
		"no-such-host.invalid:1": depose.Unknown,
	} {
		if got := depose.Probe(t.Context(), addr, time.Second); got != want {
			t.Errorf("Probe(%s) = %v, want %v", addr, got, want)
		}
	}
}

// leaderStub is a "leader": a gRPC health server on loopback, and its lock
// node in ZooKeeper, made on a session of its own, which outlives the
// test's waits (a minute).
type leaderStub struct {
	srv  *grpc.Server
	addr string
	node string
}

func startLeaderStub(t *testing.T, conn *zk.Conn, advertise func(addr string) string) *leaderStub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln) // ends at Stop
	t.Cleanup(srv.Stop)
	addr := advertise(ln.Addr().String())
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	if err := cluster.EnsurePath(conn, "/storm/leader-lock"); err != nil {
		t.Fatal(err)
	}
	node, err := conn.Create("/storm/leader-lock/_c_stub-"+cluster.LockNodeSuffix,
		cluster.Encode(&clusterv1.NimbusInfo{Host: host, Port: int32(p)}), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	return &leaderStub{srv: srv, addr: addr, node: node}
}

// startDeposer runs a Deposer as a follower at 127.0.0.1:1 and returns
// its registry.
func startDeposer(t *testing.T, zkAddr string) *prometheus.Registry {
	t.Helper()
	return startDeposerAt(t, zkAddr, "127.0.0.1:1")
}

// startDeposerAt runs a Deposer of the nimbus at self, with a session of
// its own, and returns its registry.
func startDeposerAt(t *testing.T, zkAddr, self string) *prometheus.Registry {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	sess, err := cluster.Connect(t.Context(), cluster.SessionConfig{Servers: []string{zkAddr}, SessionTimeout: 10 * time.Second,
		ConnectTimeout: 10 * time.Second, Root: "/storm", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	locks := cluster.NewNimbusInfoCache(sess, sess.Paths().LeaderLock(), log)
	reg := prometheus.NewRegistry()
	if err := sess.EnsureDirs(sess.Paths().LeaderLock(), sess.Paths().Challenges()); err != nil {
		t.Fatal(err)
	}
	d := depose.New(depose.Config{Session: sess, Locks: locks, Self: self, Creds: insecure.NewCredentials(),
		SessionTimeout: 10 * time.Second, Metrics: reg, Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = locks.Run(ctx); done <- struct{}{} }()
	go func() { d.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return reg
}

func deposed(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return counter(t, reg, "nimbus_depositions_total", "")
}

// counter sums the counter name's series, or only the one whose outcome
// label is outcome if it is not empty.
func counter(t *testing.T, reg *prometheus.Registry, name, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == name && (outcome == "" || label(m, "outcome") == outcome) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A leader whose process is gone (its port refuses) is deposed: its lock
// node is deleted, long before its session would expire.
func TestDeadLeaderIsDeposed(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	conn := testcluster.ConnectZooKeeper(t, time.Minute, z.Addr())
	stub := startLeaderStub(t, conn, func(addr string) string { return addr })
	reg := startDeposer(t, z.Addr())

	stub.srv.Stop() // the process dies: the stream breaks, the port refuses
	testcluster.WaitFor(t, 10*time.Second, "the dead leader's lock node deleted, and counted", func() error {
		if ok, _, err := conn.Exists(stub.node); err != nil || ok {
			return fmt.Errorf("exists %v (%v)", ok, err)
		}
		if n := deposed(t, reg); n != 1 {
			return fmt.Errorf("nimbus_depositions_total = %v, want 1", n)
		}
		return nil
	})
}

// A leader the follower cannot reach (a cut proxy between them: the
// stream breaks, connections are accepted and dropped) is not provably
// dead: it is not deposed.
func TestUnreachableLeaderIsNotDeposed(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	conn := testcluster.ConnectZooKeeper(t, time.Minute, z.Addr())
	var proxy *testcluster.Proxy
	stub := startLeaderStub(t, conn, func(addr string) string {
		proxy = testcluster.StartProxy(t, addr)
		return proxy.Addr()
	})
	reg := startDeposer(t, z.Addr())

	proxy.Cut()
	// Several streams break and are retried meanwhile (every 500 ms): none
	// may depose.
	tick := time.NewTicker(testcluster.PollInterval)
	defer tick.Stop()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); <-tick.C {
		if ok, _, err := conn.Exists(stub.node); err != nil || !ok {
			t.Fatalf("the unreachable leader's lock node: exists %v (%v)", ok, err)
		}
		if n := deposed(t, reg); n != 0 {
			t.Fatalf("nimbus_depositions_total = %v, want 0", n)
		}
	}
}

// A leader whose port refuses but whose process runs (a firewall resetting
// connections to it, a follower's stale name for it) answers the
// follower's challenge through ZooKeeper, and is not deposed.
func TestLeaderThatAnswersIsNotDeposed(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	conn := testcluster.ConnectZooKeeper(t, time.Minute, z.Addr())
	stub := startLeaderStub(t, conn, func(addr string) string { return addr })
	startDeposerAt(t, z.Addr(), stub.addr) // the leader's own: it answers
	reg := startDeposer(t, z.Addr())

	stub.srv.Stop() // the port refuses; the leader's process answers
	testcluster.WaitFor(t, 10*time.Second, "a challenge answered", func() error {
		if n := counter(t, reg, "nimbus_deposition_challenges_total", "answered"); n < 1 {
			return fmt.Errorf("answered challenges %v", n)
		}
		return nil
	})
	if ok, _, err := conn.Exists(stub.node); err != nil || !ok {
		t.Fatalf("the live leader's lock node: exists %v (%v)", ok, err)
	}
	if n := deposed(t, reg); n != 0 {
		t.Fatalf("nimbus_depositions_total = %v, want 0", n)
	}
}

// A follower that deposed a leader leaves the same leader to its session
// if it refuses again within a session timeout: depositions of one leader
// are bounded whatever the network does.
func TestRecentlyDeposedLeaderIsLeftToItsSession(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	conn := testcluster.ConnectZooKeeper(t, time.Minute, z.Addr())
	stub := startLeaderStub(t, conn, func(addr string) string { return addr })
	reg := startDeposer(t, z.Addr())
	stub.srv.Stop()
	testcluster.WaitFor(t, 10*time.Second, "the first deposition", func() error {
		if n := deposed(t, reg); n != 1 {
			return fmt.Errorf("nimbus_depositions_total = %v", n)
		}
		return nil
	})
	again := startLeaderStub(t, conn, func(string) string { return stub.addr }) // the same leader queues again
	again.srv.Stop()
	testcluster.WaitFor(t, 10*time.Second, "the second refusal left to the session", func() error {
		if n := counter(t, reg, "nimbus_deposition_challenges_total", "recent"); n < 1 {
			return fmt.Errorf("recent %v", n)
		}
		return nil
	})
	if ok, _, err := conn.Exists(again.node); err != nil || !ok {
		t.Fatalf("the leader deposed a moment ago was deposed again: exists %v (%v)", ok, err)
	}
	if n := deposed(t, reg); n != 1 {
		t.Fatalf("nimbus_depositions_total = %v, want 1", n)
	}
}
