package integration

import (
	"fmt"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestLeaderSurvivesLossOfOneZooKeeperServer(t *testing.T) {
	e := testcluster.StartEnsemble(t, 3)
	c := testcluster.New(t, e.ConnectString(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 3)
	epoch, leader := c.WaitLeader(t, ps, 15*time.Second)

	// Whichever server a nimbus uses, losing one of three keeps quorum:
	// sessions move to another server and the leader stays.
	for i := range e.Servers {
		e.Servers[i].Stop()
		testcluster.WaitFor(t, 15*time.Second, "one nimbus acting as leader", func() error {
			if n := actingLeaders(c, ps); n != 1 {
				return fmt.Errorf("%d nimbuses act as leader", n)
			}
			return nil
		})
		gotEpoch, gotLeader := c.WaitLeader(t, ps, 15*time.Second)
		if gotEpoch != epoch || gotLeader != leader {
			t.Fatalf("after stopping ZooKeeper server %d: leader %s epoch %d, want %s epoch %d",
				i, gotLeader.Name, gotEpoch, leader.Name, epoch)
		}
		e.Servers[i].Start()
		e.WaitQuorum(t)
	}
}

func TestQuorumLossThenRecoveryLeavesExactlyOneLeader(t *testing.T) {
	e := testcluster.StartEnsemble(t, 3)
	const session = 4 * time.Second
	c := testcluster.New(t, e.ConnectString(), testcluster.WithSessionTimeout(session))
	ps := c.StartNimbuses(t, 3)
	c.WaitLeader(t, ps, 15*time.Second)

	// Two of three down: no quorum, so no session is served and no nimbus
	// may act as leader.
	e.Servers[0].Stop()
	e.Servers[1].Stop()
	testcluster.WaitFor(t, 15*time.Second, "no nimbus acting as leader without quorum", func() error {
		if n := actingLeaders(c, ps); n != 0 {
			return fmt.Errorf("%d nimbuses act as leader", n)
		}
		return nil
	})
	// The fault lasts longer than the session timeout: that duration is
	// the point of the test, not a wait for a condition.
	<-time.After(session + time.Second)
	e.StartAll()
	e.WaitQuorum(t)

	// Exactly one leader again, all agree, and nobody stuck outside the
	// queue.
	testcluster.WaitFor(t, 30*time.Second, "exactly one nimbus acting as leader", func() error {
		if n := actingLeaders(c, ps); n != 1 {
			return fmt.Errorf("%d nimbuses act as leader", n)
		}
		return nil
	})
	c.WaitLeader(t, ps, 30*time.Second)
	c.WaitQueued(t, 3, 30*time.Second)
	if n := actingLeaders(c, ps); n != 1 {
		t.Fatalf("%d nimbuses act as leader, want 1", n)
	}
}

// actingLeaders counts the nimbuses whose leader health service is
// SERVING: those running a term, not merely reporting a cached leader.
func actingLeaders(c *testcluster.Cluster, ps []*testcluster.Process) int {
	n := 0
	for _, p := range ps {
		if st, err := c.Health(p, nimbusv1.LeaderHealthService); err == nil && st == healthpb.HealthCheckResponse_SERVING {
			n++
		}
	}
	return n
}
