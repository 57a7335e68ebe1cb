package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A linearizable read at a follower shows every write the leader
// acknowledged before it, or fails Unavailable; a plain read, from the
// follower's watch-fed cache, may lag.
//
// Whether a follower lags on its own is a race with its watches, so the
// test makes it lag: the follower reaches ZooKeeper through a Proxy, and
// while the proxy holds back what ZooKeeper sends it (Drop FromUpstream)
// the follower cannot learn of a write made after the Drop. Its plain read
// must then show the old status, and its linearizable read must not: its
// Sync is not answered, so it fails Unavailable within its deadline. A
// nimbus that answered linearizable reads from its cache alone would show
// the old status and fail the test. Once the proxy lets ZooKeeper's
// answers through again, the linearizable read shows the write.
func TestLinearizableReadsAtAFollowerSeeAcknowledgedWrites(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	args := testcluster.WithArgs("--topology.min.replication.count", "2")
	leader := c.StartNimbuses(t, 1, args, testcluster.WithName("leader"))[0]
	c.WaitLeader(t, []*testcluster.Process{leader}, 10*time.Second)

	// The follower, through the proxy, on a cluster of its own with the
	// same security (if any). Its session of 10 s keeps go-zookeeper from
	// giving up on the held connection (after 2/3 of it) while the test
	// holds it back, a few seconds.
	proxy := testcluster.StartProxy(t, z.Addr())
	opts := []testcluster.ClusterOption{testcluster.WithSessionTimeout(10 * time.Second)}
	if c.Security != nil {
		opts = append(opts, testcluster.WithSecurity(c.Security))
	}
	follower := testcluster.New(t, proxy.Addr(), opts...).StartNimbuses(t, 1, args, testcluster.WithName("follower"))[0]
	if _, l := c.WaitLeader(t, []*testcluster.Process{leader, follower}, 10*time.Second); l != leader {
		t.Fatalf("%s leads; want %s, started first", l.Name, leader.Name)
	}
	submit(t, newClient(t, c, leader), "flipper", randomBytes(t, 1000))
	at, fol := c.API(leader), c.API(follower)

	// read reads flipper's status at the follower in both answers: the
	// topology's and the cluster summary's.
	read := func(linearizable bool, timeout time.Duration) (info, sum clusterv1.TopologyStatus, err error) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		ti, err := fol.GetTopologyInfo(ctx, &nimbusv1.GetTopologyInfoRequest{Name: "flipper", Linearizable: linearizable})
		if err != nil {
			return 0, 0, err
		}
		ci, err := fol.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{Linearizable: linearizable})
		if err != nil {
			return 0, 0, err
		}
		return ti.GetTopology().GetStatus(), ci.GetCluster().GetTopologies()[0].GetStatus(), nil
	}
	flip := func(i int) clusterv1.TopologyStatus {
		t.Helper()
		var err error
		want := clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE
		if i%2 == 0 {
			_, err = at.DeactivateTopology(t.Context(), &nimbusv1.DeactivateTopologyRequest{Name: "flipper"})
		} else {
			want = clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE
			_, err = at.ActivateTopology(t.Context(), &nimbusv1.ActivateTopologyRequest{Name: "flipper"})
		}
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
	// linearizableSees fails the test at once if a linearizable read
	// answers with anything but want, and reports whether it answered.
	linearizableSees := func(round string, want clusterv1.TopologyStatus, timeout time.Duration) error {
		t.Helper()
		info, sum, err := read(true, timeout)
		if err != nil {
			return err
		}
		if info != want || sum != want {
			t.Fatalf("%s: a linearizable read at the follower after an acknowledged write to %v saw %v (topology) and %v (summary)", round, want, info, sum)
		}
		return nil
	}

	// Connected: every linearizable read answers, with the write.
	for i := range 20 {
		if err := linearizableSees(fmt.Sprintf("round %d", i), flip(i), 5*time.Second); err != nil {
			t.Fatalf("round %d: a linearizable read at the follower: %v", i, err)
		}
	}
	before := clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE // round 19's

	// Held back: ZooKeeper's bytes sent after Drop returns do not reach
	// the follower, so the write below (acknowledged by the leader, whose
	// cache shows it) is certainly not in the follower's cache.
	proxy.Drop(testcluster.FromUpstream)
	want := flip(20)
	if info, sum, err := read(false, 5*time.Second); err != nil {
		t.Fatalf("a plain read at the held-back follower: %v; want its cached answer", err)
	} else if info != before || sum != before {
		t.Fatalf("a plain read at the held-back follower saw %v (topology) and %v (summary); want %v, from before the write", info, sum, before)
	}
	switch err := linearizableSees("held back", want, 2*time.Second); status.Code(err) {
	case codes.OK: // it saw the write: allowed, although the Sync had no answer
	case codes.Unavailable: // as it should: the Sync had no answer within the deadline
	case codes.DeadlineExceeded:
		// Call gives up 100 ms before the deadline; an answer later than
		// that on a loaded machine is late, but not stale.
		t.Logf("a linearizable read at the held-back follower: %v (no answer in time)", err)
	default:
		t.Fatalf("a linearizable read at the held-back follower: %v; want Unavailable", err)
	}

	// Let through: linearizable reads answer again, with the write.
	proxy.Restore()
	testcluster.WaitFor(t, 30*time.Second, "a linearizable read at the follower once let through", func() error {
		err := linearizableSees("let through", want, 5*time.Second)
		if s, ok := status.FromError(err); ok && s.Code() != codes.OK && s.Code() != codes.Unavailable && s.Code() != codes.DeadlineExceeded {
			t.Fatalf("a linearizable read at the follower once let through: %v", err)
		}
		return err
	})
	if err := linearizableSees("after", flip(21), 5*time.Second); err != nil {
		t.Fatalf("a linearizable read at the follower after it caught up: %v", err)
	}
}
