package nimbus

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Read-your-writes at the leader: a read of the leader right after an
// acknowledged write shows it, though reads come from the watch-fed cache.
// The leader answers a transition only once its cache has read the
// StormBase version its write left, and a submission only once its cache
// lists the topology. Each round reads as soon as the answer arrives, so a
// leader that answered before its cache caught up (a watch round trip
// behind) is caught within a few rounds.
func TestInProcessLeaderReadsItsOwnWrites(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	awaitLeading(t, s)
	cl := sdk(t, s)
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	api := nimbusv1.NewNimbusServiceClient(conn)

	const rounds = 100
	for i := range rounds {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		// A submission is listed at once.
		name := "ryw" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if i < 5 {
			id := submitSpec(t, cl, name)
			if _, err := api.GetTopologyInfo(ctx, &nimbusv1.GetTopologyInfoRequest{Name: name}); err != nil {
				t.Fatalf("round %d: the submitted %s (%s) read at once: %v", i, name, id, err)
			}
		}
		// A transition's status is read at once.
		want := clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE
		var err error
		if i%2 == 0 {
			_, err = api.DeactivateTopology(ctx, &nimbusv1.DeactivateTopologyRequest{Name: "rywaa"})
		} else {
			want = clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE
			_, err = api.ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: "rywaa"})
		}
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		resp, err := api.GetTopologyInfo(ctx, &nimbusv1.GetTopologyInfoRequest{Name: "rywaa"})
		cancel()
		if err != nil {
			t.Fatalf("round %d: read after the write: %v", i, err)
		}
		if got := resp.GetTopology().GetStatus(); got != want {
			t.Fatalf("round %d: read at the leader right after its acknowledged write: %v, want %v", i, got, want)
		}
	}
}
