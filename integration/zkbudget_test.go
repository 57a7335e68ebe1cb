package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// scheduleRounds reads how many scheduling rounds p has done as leader
// from its metrics.
func scheduleRounds(t *testing.T, p *testcluster.Process) int {
	t.Helper()
	text, err := p.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, "nimbus_schedule_duration_seconds_count "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// With real processes: a submission of 8,500 executors (85 components of
// parallelism 100, a spec of about 10 KB) would have an assignment over
// ZooKeeper's jute.maxbuffer, whose write would close the leader's
// connection at every scheduling round. It is refused with
// INVALID_ARGUMENT naming storm.zookeeper.jute.maxbuffer, nothing of it
// reaches ZooKeeper or the store, and the leader keeps its epoch through
// many scheduling rounds with a live supervisor that has free slots.
func TestSubmitOverZooKeeperNodeSizeIsRefusedAndLeadershipHolds(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "200ms"))
	epoch, leader := c.WaitLeader(t, ps, 20*time.Second)
	c.StartSupervisors(t, 1, testcluster.WithSlots(testcluster.FreePorts(t, 4)...))
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	paths := cluster.Paths{Root: c.Root}

	// The scheduler places topologies on the supervisor.
	ordinary := submit(t, cl, "ordinary", randomBytes(t, 1000)).GetTopologyId()
	testcluster.WaitFor(t, 20*time.Second, "the ordinary topology assigned", func() error {
		data, _, err := conn.Get(paths.Assignment(ordinary))
		if err != nil {
			return err
		}
		a := new(clusterv1.Assignment)
		if err := cluster.Decode("assignment", data, a); err != nil || len(a.GetExecutors()) != 5 {
			return fmt.Errorf("%v (%v)", a, err)
		}
		return nil
	})

	spec := testSpec("oversize")
	spec.Components = nil
	for i := range 85 {
		id := fmt.Sprintf("component-%03d-%s", i, strings.Repeat("x", 96))
		spec.Components = append(spec.Components, &nimbusv1.ComponentSpec{Id: id, Parallelism: 100})
	}
	artifact := randomBytes(t, 1000)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil)
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "storm.zookeeper.jute.maxbuffer") {
		t.Fatalf("submit of 8,500 executors: %v; want InvalidArgument naming storm.zookeeper.jute.maxbuffer", err)
	}
	t.Logf("refused: %v", err)

	for _, dir := range []string{paths.Storms(), paths.CodeDistributor(), paths.Assignments()} {
		if ids := zkChildren(t, conn, dir); !slices.Equal(ids, []string{ordinary}) {
			t.Fatalf("%s holds %v, want only %s", dir, ids, ordinary)
		}
	}
	for _, sub := range []string{"tmp", "code"} {
		entries, err := os.ReadDir(filepath.Join(leader.LocalDir, "nimbus", sub))
		if err != nil || (sub == "tmp" && len(entries) != 0) || (sub == "code" && len(entries) != 1) {
			t.Fatalf("the leader's store %s holds %v (%v)", sub, entries, err)
		}
	}

	before := scheduleRounds(t, leader)
	testcluster.WaitFor(t, 20*time.Second, "ten more scheduling rounds", func() error {
		if n := scheduleRounds(t, leader); n < before+10 {
			return fmt.Errorf("%d rounds since", n-before)
		}
		return nil
	})
	summary, now, err := c.AgreedLeader(ps)
	if err != nil || now != leader || summary.GetEpoch() != epoch {
		t.Fatalf("leadership moved: %v at epoch %d, was %s at %d (%v)", now, summary.GetEpoch(), leader.Name, epoch, err)
	}
}
