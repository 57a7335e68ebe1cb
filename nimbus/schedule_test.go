package nimbus

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// An assignment over the node budget is never written, and said once
// until it fits again.
func TestOversizeAssignmentIsNotWrittenAndLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	sch := newScheduler()
	big := assignmentWrite{id: "big-1-1", out: &clusterv1.Assignment{SupervisorHosts: map[string]string{"s": strings.Repeat("h", 2000)}}}
	budget := proto.Size(big.out) - 1
	for range 3 {
		if sch.fits(big, budget, log) {
			t.Fatal("an assignment over the budget fits")
		}
	}
	if n := strings.Count(logs.String(), "larger than a ZooKeeper node"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
	if !sch.fits(big, budget+1, log) || sch.oversize[big.id] {
		t.Fatal("an assignment within the budget does not fit, or stays marked")
	}
}

// An assignment is never written for a topology whose StormBase is gone,
// whatever the caches still say: the write fails with NoNode and creates
// nothing, and the round takes that as the cache lagging.
func TestAssignmentIsNotWrittenForATopologyGone(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	leading(t, s)
	term := s.election.Current()
	const id = "gone-1-1"
	base := &clusterv1.StormBase{Name: "gone", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, NumWorkers: 1}
	placed := assign.Assignment{{Component: "spout", TaskStart: 1, TaskEnd: 1}: {SupervisorID: "sup-a", Port: 6700}}
	for _, exists := range []bool{false, true} {
		w := s.assignmentWrite(term, id, placed, nil, exists, base, map[string]string{"sup-a": "127.0.0.1"}, time.Now())
		errs := writeAll(term, []assignmentWrite{w})
		if !errors.Is(errs[0], zk.ErrNoNode) {
			t.Fatalf("assignment write (over a node: %v) for a topology without a StormBase: %v, want NoNode", exists, errs[0])
		}
		if n, err := newScheduler().wrote([]assignmentWrite{w}, errs); n != 0 || err != nil {
			t.Fatalf("wrote: %d, %v; want 0 and no failure (the cache lagged)", n, err)
		}
	}
	if ok, _, err := s.sess.Conn().Exists(s.sess.Paths().Assignment(id)); err != nil || ok {
		t.Fatalf("assignment of a topology without a StormBase exists: %v (%v)", ok, err)
	}
}
