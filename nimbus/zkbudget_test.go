package nimbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// registerSupervisor registers a live supervisor with four slots, as a
// supervisor would (an ephemeral node of the test's own session), so the
// leader schedules onto it.
func registerSupervisor(t *testing.T, zkAddr string, s *Server, id, host string) {
	t.Helper()
	conn := testcluster.ConnectZooKeeper(t, 4*time.Second, zkAddr)
	info := &clusterv1.SupervisorInfo{SupervisorId: id, Host: host, SlotPorts: []int32{6700, 6701, 6702, 6703},
		StartTimeUnixMs: time.Now().UnixMilli(), LastHeartbeatUnixMs: time.Now().UnixMilli()}
	testcluster.WaitFor(t, 10*time.Second, "the supervisor registered", func() error {
		_, err := conn.Create(s.sess.Paths().Supervisor(id), cluster.Encode(info), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}

// scheduleRounds is how many scheduling rounds s has done as leader.
func scheduleRounds(t *testing.T, s *Server) uint64 {
	t.Helper()
	families, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "nimbus_schedule_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// bigSpec is 85 components of parallelism 100 (8,500 executors) whose ids
// make a spec of about 10 KB: its assignment would be about 1.2 MB.
func bigSpec() *nimbusv1.TopologySpec {
	spec := &nimbusv1.TopologySpec{Name: "big", NumWorkers: 4, WorkerCommand: []string{"{code_dir}/artifact"}}
	for i := range 85 {
		id := fmt.Sprintf("component-%03d-%s", i, strings.Repeat("x", 96))
		spec.Components = append(spec.Components, &nimbusv1.ComponentSpec{Id: id, Parallelism: 100})
	}
	return spec
}

// checkBudgetRefusal fails unless err is INVALID_ARGUMENT for field,
// naming storm.zookeeper.jute.maxbuffer and the size.
func checkBudgetRefusal(t *testing.T, err error, field string, size int64) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	if !strings.Contains(st.Message(), configs.KeyZKMaxBuffer) || !strings.Contains(st.Message(), fmt.Sprint(size)) {
		t.Fatalf("%q does not name %s and the size %d", st.Message(), configs.KeyZKMaxBuffer, size)
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && br.GetFieldViolations()[0].GetField() == field {
			return
		}
	}
	t.Fatalf("%v: no BadRequest naming %s", err, field)
}

// A topology whose assignment would be over the node size ZooKeeper
// accepts (8,500 executors: about 1.2 MB) is refused with INVALID_ARGUMENT
// before anything is written, and the leader keeps its session and term
// through many scheduling rounds. Without the check it would be committed,
// and every round would send ZooKeeper a write that closes the leader's
// connection. A live supervisor is registered, so the scheduler would
// indeed place it (an ordinary topology is placed).
func TestInProcessOversizeSubmitIsRefusedAndTheLeaderStays(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) { c.MonitorFreq = 100 * time.Millisecond })
	awaitLeading(t, s)
	term := s.election.Current()
	_, session, _ := s.sess.State()
	const supID, supHost = "sup-0123456789abcdef", "127.0.0.1" // what a supervisor on loopback registers
	registerSupervisor(t, z.Addr(), s, supID, supHost)
	cl := sdk(t, s)
	ordinary := submitSpec(t, cl, "ordinary")
	testcluster.WaitFor(t, 10*time.Second, "the ordinary topology assigned to the supervisor", func() error {
		data, _, err := s.sess.Conn().Get(s.sess.Paths().Assignment(ordinary))
		if err != nil {
			return err
		}
		a := new(clusterv1.Assignment)
		if err := cluster.Decode("assignment", data, a); err != nil || len(a.GetExecutors()) != 5 {
			return fmt.Errorf("%v (%v)", a, err)
		}
		return nil
	})

	// The scheduler's own assignment of it is over the budget and within
	// this bound (package leading's TestBudgetBoundsTheSchedulersAssignment).
	spec := bigSpec()
	base := topology.NewStormBase(spec, make([]byte, 32), term.Epoch(), time.Now())
	budget := s.svc.zkBudget()
	bound := validate.AssignmentBound(base.GetComponentExecutors(), base.GetNumWorkers(), budget.SupervisorIDLen, budget.HostLen)

	before := scheduleRounds(t, s)
	artifact := []byte("#!/bin/sh\nexit 0\n")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil)
	checkBudgetRefusal(t, err, "spec.components", bound)

	// Nothing written: the ordinary topology is all there is.
	for _, dir := range []string{s.sess.Paths().Storms(), s.sess.Paths().CodeDistributor(), s.sess.Paths().Assignments()} {
		ids, _, err := s.sess.Conn().Children(dir)
		if err != nil || len(ids) != 1 || ids[0] != ordinary {
			t.Fatalf("%s holds %v (%v); want only %s", dir, ids, err, ordinary)
		}
	}
	if entries, err := os.ReadDir(s.store.Root() + "/tmp"); err != nil || len(entries) != 0 {
		t.Fatalf("the store's tmp holds %v (%v)", entries, err)
	}

	// The leader stays: the same term and session through many rounds.
	testcluster.WaitFor(t, 20*time.Second, "ten more scheduling rounds", func() error {
		if n := scheduleRounds(t, s); n < before+10 {
			return fmt.Errorf("%d rounds since", n-before)
		}
		return nil
	})
	_, now, _ := s.sess.State()
	if cur := s.election.Current(); cur != term || term.Context().Err() != nil || now != session {
		t.Fatalf("leadership changed: term %v (epoch %d, err %v), session %x → %x", cur, term.Epoch(), term.Context().Err(), session, now)
	}
}

// A rebalance to a parallelism whose assignment would not fit is refused
// the same way, and changes nothing.
func TestInProcessOversizeRebalanceIsRefused(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), nil)
	awaitLeading(t, s)
	cl := sdk(t, s)
	id := submitSpec(t, cl, "grows")
	before, err := storm(t, s, id)
	if err != nil {
		t.Fatal(err)
	}

	// 10,002 executors, each naming a supervisor id of the assumed 64 bytes.
	plan := map[string]int32{"bolt": 10000}
	req := &nimbusv1.RebalanceTopologyRequest{Name: "grows", WaitSecs: proto.Int32(0), ComponentParallelism: plan}
	want := validate.AssignmentBound(map[string]int32{"spout": 2, "bolt": 10000}, 2, validate.AssumedSupervisorIDLen, validate.AssumedHostLen)
	checkBudgetRefusal(t, cl.RebalanceTopology(t.Context(), req), "component_parallelism", want)
	after, err := storm(t, s, id)
	if err != nil || !proto.Equal(before, after) {
		t.Fatalf("StormBase changed: %v → %v (%v)", before, after, err)
	}

	// A rebalance that fits goes through.
	req.ComponentParallelism = map[string]int32{"bolt": 4000}
	if err := cl.RebalanceTopology(t.Context(), req); err != nil {
		t.Fatal(err)
	}
}
