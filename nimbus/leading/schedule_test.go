package leading

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/leader"
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
	sess, term := leaderTerm(t, "/storm")
	s := &scheduling{term: term, ops: sess.Ops()}
	const id = "gone-1-1"
	base := &clusterv1.StormBase{Name: "gone", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, NumWorkers: 1}
	placed := assign.Assignment{{Component: "spout", TaskStart: 1, TaskEnd: 1}: {SupervisorID: "sup-a", Port: 6700}}
	for _, exists := range []bool{false, true} {
		w := s.assignmentWrite(id, placed, nil, exists, base, map[string]string{"sup-a": "127.0.0.1"}, time.Now())
		errs := writeAll(term, []assignmentWrite{w})
		if !errors.Is(errs[0], zk.ErrNoNode) {
			t.Fatalf("assignment write (over a node: %v) for a topology without a StormBase: %v, want NoNode", exists, errs[0])
		}
		if n, err := newScheduler().wrote([]assignmentWrite{w}, errs); n != 0 || err != nil {
			t.Fatalf("wrote: %d, %v; want 0 and no failure (the cache lagged)", n, err)
		}
	}
	if ok, err := sess.Read().HasAssignment(id); err != nil || ok {
		t.Fatalf("assignment of a topology without a StormBase exists: %v (%v)", ok, err)
	}
}

// leaderTerm is a term of a real election on a ZooKeeper of its own, with
// the layout's directories under root: the fence every duty writes behind.
func leaderTerm(t *testing.T, root string) (*cluster.Session, *leader.Term) {
	t.Helper()
	z := testcluster.StartZooKeeper(t)
	sess, err := cluster.Connect(t.Context(), cluster.SessionConfig{Servers: []string{z.Addr()}, Root: root, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	p := sess.Paths()
	if err := sess.EnsureDirs(p.LeaderLock(), p.Storms(), p.Assignments(), p.CodeDistributor()); err != nil {
		t.Fatal(err)
	}
	e := leader.New(leader.Config{Session: sess, Self: &clusterv1.NimbusInfo{Host: "127.0.0.1", Port: 1}})
	e.Queue()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wait, stop := context.WithTimeout(t.Context(), 20*time.Second)
	defer stop()
	term, err := e.Await(wait)
	if err != nil {
		t.Fatalf("no term: %v", err)
	}
	return sess, term
}

// A rewritten assignment keeps the fields a newer release wrote that this
// one does not know (docs/ARCHITECTURE.md section 18).
func TestAssignmentRewriteKeepsUnknownFields(t *testing.T) {
	sess, term := leaderTerm(t, "/storm")
	s := &scheduling{term: term, ops: sess.Ops()}
	unknown := protowire.AppendString(protowire.AppendTag(nil, 999, protowire.BytesType), "a newer release's field")
	data := append(cluster.Encode(&clusterv1.Assignment{CodeMetaDigest: make([]byte, 32)}), unknown...)
	old := new(clusterv1.Assignment)
	if err := cluster.Decode("old", data, old); err != nil {
		t.Fatal(err)
	}
	base := &clusterv1.StormBase{Name: "x", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, CodeMetaDigest: make([]byte, 32)}
	w := s.assignmentWrite("x-1-1", assign.Assignment{}, old, true, base, nil, time.Now())
	if !bytes.Contains(cluster.Encode(w.out), unknown) {
		t.Fatal("the rewritten assignment dropped the unknown field")
	}
}
