package leading

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The bound submit and rebalance check (validate.AssignmentBound, through
// topology.Budget) holds for the assignment the scheduler really builds:
// for 8,500 executors whose ids make a spec of about 10 KB, placed on a
// supervisor as one on loopback registers, the assignment is over what a
// node may hold, and within the bound with the real lengths, which is
// within the bound as checked (the longest ids and hosts assumed).
func TestBudgetBoundsTheSchedulersAssignment(t *testing.T) {
	sess, term := leaderTerm(t, "/storm")
	s := &scheduling{term: term, ops: sess.Ops()}
	spec := &nimbusv1.TopologySpec{Name: "big", NumWorkers: 4}
	for i := range 85 {
		id := fmt.Sprintf("component-%03d-%s", i, strings.Repeat("x", 96))
		spec.Components = append(spec.Components, &nimbusv1.ComponentSpec{Id: id, Parallelism: 100})
	}
	const supID, supHost = "sup-0123456789abcdef", "127.0.0.1"
	base := topology.NewStormBase(spec, make([]byte, 32), term.Epoch(), time.Now())
	const id = "big-2-1700000000"
	placed := assign.Schedule([]assign.Topology{{ID: id, NumWorkers: int(spec.GetNumWorkers()), Executors: assign.Executors(base.GetComponentExecutors())}},
		[]assign.Supervisor{{ID: supID, Ports: []int32{6700, 6701, 6702, 6703}}}, nil)[id]
	write := s.assignmentWrite(id, placed, nil, false, base, map[string]string{supID: supHost}, time.Now())

	measured := int64(proto.Size(write.out))
	exact := validate.AssignmentBound(base.GetComponentExecutors(), base.GetNumWorkers(), len(supID), len(supHost))
	budget := topology.NewBudget(configs.Default().ZKMaxBuffer, map[string]*clusterv1.SupervisorInfo{supID: {SupervisorId: supID, Host: supHost}})
	bound := validate.AssignmentBound(base.GetComponentExecutors(), base.GetNumWorkers(), budget.SupervisorIDLen, budget.HostLen)
	t.Logf("spec %d bytes, StormBase %d, assignment as scheduled %d bytes; bound %d with these ids and hosts, %d as checked (ids %d, hosts %d bytes); budget %d",
		proto.Size(spec), proto.Size(base), measured, exact, bound, budget.SupervisorIDLen, budget.HostLen, budget.Limit)
	switch {
	case measured <= int64(budget.Limit):
		t.Fatalf("the assignment (%d bytes) fits the budget (%d): the test proves nothing", measured, budget.Limit)
	case measured > exact || exact > bound:
		t.Fatalf("the bound does not hold: measured %d, bound %d with the real lengths, %d as checked", measured, exact, bound)
	}
}

// The margin is enough: under a root of 1 KiB, the leader's write of an
// assignment of exactly the budget, at the longest topology id, as the
// scheduler sends it (assignmentWrite: the fence, the StormBase's check,
// the create), is accepted by ZooKeeper (3.8, jute.maxbuffer at its
// default, as storm.zookeeper.jute.maxbuffer's default says).
func TestZooKeeperAcceptsABudgetSizedWrite(t *testing.T) {
	sess, term := leaderTerm(t, "/"+strings.Repeat("r", 1023))
	s := &scheduling{term: term, ops: sess.Ops()}
	id := validate.NewTopologyID(strings.Repeat("n", 128), 1<<63-1, time.Unix(1<<62, 0))
	if err := validate.TopologyID("id", id); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Conn().Create(sess.Paths().Storm(id), nil, 0, sess.ACL()); err != nil {
		t.Fatal(err)
	}
	limit := validate.ZKNodeBudget(configs.Default().ZKMaxBuffer)
	placed := assign.Assignment{{Component: "c", TaskStart: 1, TaskEnd: 1}: {SupervisorID: "s", Port: 1}}
	base := &clusterv1.StormBase{CodeMetaDigest: make([]byte, 32)}
	var w assignmentWrite
	for pad := limit - 200; proto.Size(w.out) < limit; pad++ {
		w = s.assignmentWrite(id, placed, nil, false, base, map[string]string{"s": strings.Repeat("h", pad)}, time.Unix(0, 0))
	}
	if proto.Size(w.out) != limit {
		t.Fatalf("payload %d bytes, want %d", proto.Size(w.out), limit)
	}
	if err := writeAll(term, []assignmentWrite{w})[0]; err != nil {
		t.Fatalf("a budget-sized write (%d bytes, path %d bytes): %v", limit, len(sess.Paths().Assignment(id)), err)
	}
	data, _, err := sess.Conn().Get(sess.Paths().Assignment(id))
	if err != nil || len(data) != limit {
		t.Fatalf("read back %d bytes (%v)", len(data), err)
	}
	if term.Context().Err() != nil {
		t.Fatal("the term ended")
	}
}
