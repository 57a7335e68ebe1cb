package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A supervisor whose session lives on but whose heartbeat stops (hung,
// not dead) loses its work within 1.5 nimbus.supervisor.timeout.secs:
// nimbuses do not watch heartbeats (that would cost each a read per
// heartbeat); the leader reads them every (timeout - heartbeat period)/2
// (nimbus.heartbeatReadEvery).
func TestSilentSupervisorLosesItsWork(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	const timeout = 3 * time.Second
	// The timeout must exceed the heartbeat period, a supervisor key the
	// nimbus has no flag for.
	n, err := c.StartNimbus(testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--nimbus.supervisor.timeout.secs", "3"),
		testcluster.WithEnv("STORM_SUPERVISOR_HEARTBEAT_FREQUENCY_SECS=1"))
	if err != nil {
		t.Fatal(err)
	}
	ps := []*testcluster.Process{n}
	c.WaitLeader(t, ps, 10*time.Second)
	cl := newClient(t, c, ps...)

	// The silent supervisor is this test's session: its node stays as long
	// as the test lives.
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	path := "/storm/supervisors/silent"
	started := time.Now().UnixMilli()
	info := func(beat int64) []byte {
		return cluster.Encode(&clusterv1.SupervisorInfo{SupervisorId: "silent", Host: "ghost", SlotPorts: []int32{7700},
			StartTimeUnixMs: started, LastHeartbeatUnixMs: beat, Version: "test"})
	}
	if _, err := conn.Create(path, info(1), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	placedOn := func(id string) (map[string]int, error) {
		a := new(clusterv1.Assignment)
		if err := readable(conn, "/storm/assignments/"+id, a); err != nil {
			return nil, err
		}
		on := map[string]int{}
		for _, ea := range a.GetExecutors() {
			on[ea.GetSlot().GetSupervisorId()]++
		}
		return on, nil
	}

	// Heartbeating, it gets the topology: it is the only supervisor.
	beating := time.NewTicker(300 * time.Millisecond)
	defer beating.Stop()
	id := submitSleeper(t, cl, "haunted", 1).GetTopologyId()
	deadline := time.After(15 * time.Second)
	for beat := int64(2); ; beat++ {
		on, err := placedOn(id)
		if err == nil && on["silent"] == 1 {
			break
		}
		select {
		case <-beating.C:
		case <-deadline:
			t.Fatalf("not placed on the heartbeating supervisor: %v, %v", on, err)
		}
		if _, err := conn.Set(path, info(beat), -1); err != nil {
			t.Fatal(err)
		}
	}

	// Silent from now on, its session alive: the work moves to a live
	// supervisor.
	beating.Stop()
	silent := time.Now()
	sups := c.StartSupervisors(t, 1, testcluster.WithArgs("--supervisor.heartbeat.frequency.secs", "1"))
	sleepers(t, conn, id, 1, 20*time.Second, sups...)
	testcluster.WaitFor(t, 5*time.Second, "nothing left on the silent supervisor", func() error {
		on, err := placedOn(id)
		if err != nil || on["silent"] != 0 || on[sups[0].ID()] != 1 {
			return fmt.Errorf("placed %v (%v)", on, err)
		}
		return nil
	})
	t.Logf("moved %v after the last heartbeat (timeout %v)", time.Since(silent).Round(100*time.Millisecond), timeout)
	if ok, _, err := conn.Exists(path); err != nil || !ok {
		t.Fatalf("the silent supervisor's node: exists %v, %v; it was to count as dead by silence alone", ok, err)
	}
}
