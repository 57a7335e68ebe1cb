package integration

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/internal/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var bin Binaries

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nimbus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, err = Build(dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// newCluster returns a Cluster on zkConnect whose processes stop when the
// test ends; their logs are printed if it failed.
func newCluster(t *testing.T, zkConnect string, sessionTimeout time.Duration) *Cluster {
	t.Helper()
	c := &Cluster{
		Bin:            bin,
		ZooKeeper:      zkConnect,
		Root:           "/storm",
		SessionTimeout: sessionTimeout,
		Dir:            t.TempDir(),
		Logf:           t.Logf,
	}
	t.Cleanup(func() {
		// NIMBUS_TEST_LOGS=1 shows the daemons' logs of passing tests too.
		if t.Failed() || os.Getenv("NIMBUS_TEST_LOGS") != "" {
			t.Log("\n" + c.Logs(60))
		}
		c.Close()
	})
	return c
}

func startNimbuses(t *testing.T, c *Cluster, n int) []*Process {
	t.Helper()
	var ps []*Process
	for range n {
		p, err := c.StartNimbus(NimbusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// waitLeader waits until every process in ps reports the same leader, one
// of ps, acting as leader (its term started: leader health SERVING), and
// returns it.
func waitLeader(t *testing.T, c *Cluster, ps []*Process, timeout time.Duration) (leaderEpoch int64, leader *Process) {
	t.Helper()
	testcluster.WaitFor(t, timeout, "one leader all agree on", func() error {
		s, p, err := c.AgreedLeader(ps)
		if err != nil {
			return err
		}
		if st, err := c.Health(p, nimbusv1.LeaderHealthService); err != nil || st != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("%s named leader but not acting yet (%v, %v)", p.Name, st, err)
		}
		leaderEpoch, leader = s.GetEpoch(), p
		return nil
	})
	return leaderEpoch, leader
}

func without(ps []*Process, drop *Process) []*Process {
	var out []*Process
	for _, p := range ps {
		if p != drop {
			out = append(out, p)
		}
	}
	return out
}

// waitQueued waits until exactly n nimbuses are registered and queued for
// leadership: no stale node of a dead session left, nobody stuck outside.
func waitQueued(t *testing.T, zkAddrs []string, n int, timeout time.Duration) {
	t.Helper()
	conn, _, err := zk.Connect(zkAddrs, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	testcluster.WaitFor(t, timeout, fmt.Sprintf("%d nimbuses registered and queued", n), func() error {
		locks, _, err := conn.Children("/storm/leader-lock")
		if err != nil {
			return err
		}
		regs, _, err := conn.Children("/storm/nimbuses")
		if err != nil {
			return err
		}
		if len(locks) != n || len(regs) != n {
			return fmt.Errorf("%d lock nodes and %d registrations", len(locks), len(regs))
		}
		return nil
	})
}
