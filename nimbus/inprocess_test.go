package nimbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The daemon in-process: the same Server cmd/nimbus runs, on a real
// ZooKeeper, so the leader's duties and submit are tested inside their
// package, where their state can be looked at directly.

// startServer starts a nimbus on zkAddr and stops it when the test ends.
func startServer(t *testing.T, zkAddr string) *Server {
	t.Helper()
	return startWith(t, zkAddr, t.TempDir(), nil)
}

// startWith starts a nimbus on zkAddr, with its local directory at localDir
// and the configuration changed by edit (if not nil), and stops it when the
// test ends.
func startWith(t *testing.T, zkAddr, localDir string, edit func(*configs.Config)) *Server {
	t.Helper()
	return startLogged(t, zkAddr, localDir, edit, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// startLogged is startWith with the nimbus logging to logger.
func startLogged(t *testing.T, zkAddr, localDir string, edit func(*configs.Config), logger *slog.Logger) *Server {
	t.Helper()
	cfg := configs.Default()
	cfg.ZKHosts = []string{zkAddr}
	cfg.ZKSessionTimeout = 4 * time.Second
	cfg.NimbusHost = "127.0.0.1"
	cfg.NimbusGRPCPort = 0
	cfg.NimbusMetricsPort = configs.PortDisabled
	cfg.UIPort = configs.PortDisabled
	cfg.LocalDir = localDir
	cfg.NimbusDrainTimeout = time.Second
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return runServer(t, New(cfg, logger))
}

// runServer starts s, closes it when the test ends, and waits until it is
// ready.
func runServer(t testing.TB, s *Server) *Server {
	t.Helper()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	select {
	case <-s.ReadyNotify():
	case err := <-s.Err():
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("nimbus not ready after 30 s")
	}
	return s
}

// awaitLeading waits until s leads.
func awaitLeading(t *testing.T, s *Server) {
	t.Helper()
	testcluster.WaitFor(t, 20*time.Second, "the nimbus leads", func() error {
		if s.election.Current() == nil {
			return errors.New("not leading")
		}
		return nil
	})
}

func sdk(t *testing.T, s *Server) *client.Client {
	t.Helper()
	cl, err := client.New([]string{s.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func submitSpec(t *testing.T, cl *client.Client, name string) string {
	t.Helper()
	spec := &nimbusv1.TopologySpec{
		Name: name, NumWorkers: 2, WorkerCommand: []string{"{code_dir}/artifact"},
		Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 2}, {Id: "bolt", Parallelism: 3}},
	}
	artifact := []byte("#!/bin/sh\nexit 0\n")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil)
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return resp.GetTopologyId()
}

// storm reads a topology's StormBase from ZooKeeper, nil once it is gone.
func storm(t *testing.T, s *Server, id string) (*clusterv1.StormBase, error) {
	t.Helper()
	p := s.sess.Paths().Storm(id)
	data, _, err := s.sess.Conn().Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	base := new(clusterv1.StormBase)
	return base, cluster.Decode(p, data, base)
}

// A submission commits its StormBase and distribution, with this nimbus as
// a replica; a kill with no wait is completed by the leader's duties: the
// StormBase, the distribution and the local code all go.
func TestInProcessSubmitThenKillIsCompletedByTheLeader(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	awaitLeading(t, s)
	cl := sdk(t, s)

	id := submitSpec(t, cl, "inproc")
	base, err := storm(t, s, id)
	if err != nil || base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE || base.GetNumWorkers() != 2 {
		t.Fatalf("committed StormBase %v, %v; want ACTIVE with 2 workers", base, err)
	}
	if err := s.store.Verify(id, base.GetCodeMetaDigest()); err != nil {
		t.Fatalf("the leader's own copy: %v", err)
	}
	if _, ok := s.view.Replicas.Replicas(id)[s.Addr()]; !ok {
		t.Fatalf("%s is not a replica of %s", s.Addr(), id)
	}

	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "inproc", WaitSecs: proto.Int32(0)}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the killed topology removed", func() error {
		if base, err := storm(t, s, id); err != nil || base != nil {
			return fmt.Errorf("StormBase still there (%v)", err)
		}
		if ok, _, err := s.sess.Conn().Exists(s.sess.Paths().Distribution(id)); err != nil || ok {
			return fmt.Errorf("distribution still there (%v)", err)
		}
		if err := s.store.Verify(id, nil); err == nil {
			return errors.New("code still held")
		}
		return nil
	})
}

// A rebalance with no wait is applied by the leader's duties: the plan's
// workers and parallelism become the topology's and its status returns.
func TestInProcessRebalanceIsCompletedByTheLeader(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	awaitLeading(t, s)
	cl := sdk(t, s)
	id := submitSpec(t, cl, "rebal")
	if err := cl.DeactivateTopology(t.Context(), "rebal"); err != nil {
		t.Fatal(err)
	}

	req := &nimbusv1.RebalanceTopologyRequest{Name: "rebal", WaitSecs: proto.Int32(0), NumWorkers: proto.Int32(4),
		ComponentParallelism: map[string]int32{"bolt": 6}}
	if err := cl.RebalanceTopology(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the rebalance applied", func() error {
		base, err := storm(t, s, id)
		switch {
		case err != nil:
			return err
		case base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:
			return fmt.Errorf("status %v, want INACTIVE again", base.GetStatus())
		case base.GetNumWorkers() != 4 || base.GetComponentExecutors()["bolt"] != 6 || base.GetComponentExecutors()["spout"] != 2:
			return fmt.Errorf("workers %d, executors %v", base.GetNumWorkers(), base.GetComponentExecutors())
		case base.GetPendingRebalance() != nil:
			return errors.New("plan still pending")
		}
		return nil
	})
}

// A distribution that no submission in progress owns and no topology
// commits (a submission an earlier leader abandoned) is removed by the
// leader's duties.
func TestInProcessAbandonedDistributionIsCollected(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	awaitLeading(t, s)
	const id = "abandoned-1-1400000000"
	dist := &clusterv1.CodeDistribution{CodeMetaDigest: bytes.Repeat([]byte{1}, 32)}
	if _, err := s.sess.Conn().Create(s.sess.Paths().Distribution(id), cluster.Encode(dist), 0, s.sess.ACL()); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the abandoned distribution removed", func() error {
		if ok, _, err := s.sess.Conn().Exists(s.sess.Paths().Distribution(id)); err != nil || ok {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}
