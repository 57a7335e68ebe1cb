package integration

import (
	"context"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A linearizable read at a follower shows every write the leader
// acknowledged before it; a plain read, from the follower's watch-fed
// cache, may lag (counted, not asserted: it is allowed).
func TestLinearizableReadsAtAFollowerSeeAcknowledgedWrites(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--topology.min.replication.count", "2"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	follower := testcluster.Without(ps, leader)[0]
	submit(t, newClient(t, c, leader), "flipper", randomBytes(t, 1000))
	at, fol := c.API(leader), c.API(follower)
	read := func(linearizable bool) (clusterv1.TopologyStatus, clusterv1.TopologyStatus) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		info, err := fol.GetTopologyInfo(ctx, &nimbusv1.GetTopologyInfoRequest{Name: "flipper", Linearizable: linearizable})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := fol.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{Linearizable: linearizable})
		if err != nil {
			t.Fatal(err)
		}
		return info.GetTopology().GetStatus(), sum.GetCluster().GetTopologies()[0].GetStatus()
	}
	stale := 0
	for i := range 100 {
		want := clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE
		var err error
		if i%2 == 0 {
			_, err = at.DeactivateTopology(t.Context(), &nimbusv1.DeactivateTopologyRequest{Name: "flipper"})
		} else {
			want = clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE
			_, err = at.ActivateTopology(t.Context(), &nimbusv1.ActivateTopologyRequest{Name: "flipper"})
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%4 < 2 { // a plain read first, so the linearizable one is not helped by its wait
			if info, sum := read(false); info != want || sum != want {
				stale++
			}
		}
		if info, sum := read(true); info != want || sum != want {
			t.Fatalf("round %d: a linearizable read at the follower after an acknowledged write to %v saw %v (topology) and %v (summary)", i, want, info, sum)
		}
	}
	t.Logf("plain reads at the follower that lagged an acknowledged write: %d of 50", stale)
}
