package integration

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A topology placed short of workers grows by itself when a slot frees
// up, within a scheduling round, also after a leader change: on one
// supervisor of three slots, "other" holds one while "wc" is rebalanced to
// three workers (it gets two); the leader is killed, a new one leads, and
// "other" is killed: wc takes the freed slot without another rebalance.
func TestShortTopologyGrowsWhenSlotFrees(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	c.StartSupervisors(t, 1, testcluster.WithSlots(testcluster.FreePorts(t, 3)...))
	cl := newClient(t, c, ps...)

	ids := []string{submitExample(t, cl, "other", 1), submitExample(t, cl, "wc", 1)}
	code, err := os.ReadFile(testcluster.Bin(t).Path("wordcount"))
	if err != nil {
		t.Fatal(err)
	}
	three, zero := int32(3), int32(0)
	if err := cl.RebalanceTopology(t.Context(), &nimbusv1.RebalanceTopologyRequest{Name: "wc", NumWorkers: &three, WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	topology := func(name string) *nimbusv1.TopologySummary {
		info, err := cl.GetTopologyInfo(t.Context(), name)
		if err != nil {
			t.Fatalf("topology %s: %v", name, err)
		}
		return info.GetTopology()
	}
	testcluster.WaitFor(t, 30*time.Second, "wc on 2 of its 3 workers, lacking 1 slot", func() error {
		if s := topology("wc"); s.GetNumWorkersAssigned() != 2 || s.GetMissingSlots() != 1 {
			return fmt.Errorf("wc: %d assigned, %d missing", s.GetNumWorkersAssigned(), s.GetMissingSlots())
		}
		return nil
	})

	follower := testcluster.Without(ps, leader)[0]
	testcluster.WaitFor(t, 30*time.Second, "the follower holding both topologies' code, queued", func() error {
		for _, id := range ids {
			if err := holds(follower, id, code); err != nil {
				return err
			}
		}
		return nil
	})
	c.WaitQueued(t, 2, 20*time.Second)
	if err := leader.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, testcluster.Without(ps, leader), 20*time.Second)
	if s := topology("wc"); s.GetMissingSlots() != 1 {
		t.Fatalf("wc lacks %d slots under the new leader with none free, want 1", s.GetMissingSlots())
	}
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "other", WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	// The kill's own round frees the slot; the leader rounds every second.
	testcluster.WaitFor(t, 10*time.Second, "wc grown to 3 workers with no rebalance", func() error {
		if s := topology("wc"); s.GetNumWorkersAssigned() != 3 || s.GetMissingSlots() != 0 {
			return fmt.Errorf("wc: %d assigned, %d missing", s.GetNumWorkersAssigned(), s.GetMissingSlots())
		}
		return nil
	})
}
