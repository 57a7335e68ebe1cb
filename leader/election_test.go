package leader_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

const sessionTimeout = 1500 * time.Millisecond

// candidate is one election on its own session.
type candidate struct {
	sess     *cluster.Session
	election *leader.Election
	net      *testcluster.Cutter
	stop     func()
	self     int32 // its port
}

func (c *candidate) port() int32 { return c.self }

func startCandidate(t *testing.T, zkAddr string, port int32, eligible func() error) *candidate {
	return startCandidateWithSession(t, zkAddr, port, eligible, sessionTimeout)
}

func startCandidateWithSession(t *testing.T, zkAddr string, port int32, eligible func() error, session time.Duration) *candidate {
	t.Helper()
	cutter := testcluster.NewCutter()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sess, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers:        []string{zkAddr},
		SessionTimeout: session,
		ConnectTimeout: 10 * time.Second,
		Root:           "/storm",
		Logger:         logger,
		Dialer:         cutter.Dial,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := leader.New(leader.Config{
		Session:  sess,
		Self:     &clusterv1.NimbusInfo{Host: "127.0.0.1", Port: port},
		Eligible: eligible,
		Logger:   logger,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	e.Queue()
	c := &candidate{sess: sess, election: e, net: cutter, self: port}
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			sess.Close()
		})
	}
	t.Cleanup(c.stop)
	return c
}

func leaders(cs []*candidate) []*candidate {
	var out []*candidate
	for _, c := range cs {
		if c.election.IsLeader() {
			out = append(out, c)
		}
	}
	return out
}

// waitOneLeader waits until exactly one of cs leads and returns it.
func waitOneLeader(t *testing.T, cs []*candidate, timeout time.Duration) *candidate {
	t.Helper()
	var got *candidate
	testcluster.WaitFor(t, timeout, "exactly one leader", func() error {
		ls := leaders(cs)
		if len(ls) != 1 {
			return fmt.Errorf("%d leaders", len(ls))
		}
		got = ls[0]
		return nil
	})
	return got
}

func TestExactlyOneLeaderAndItHandsOverOnLeave(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{
		startCandidate(t, z.Addr(), 1, nil),
		startCandidate(t, z.Addr(), 2, nil),
		startCandidate(t, z.Addr(), 3, nil),
	}
	first := waitOneLeader(t, cs, 10*time.Second)
	term := first.election.Current()
	if term.Epoch() < 1 {
		t.Fatalf("epoch %d, want >= 1", term.Epoch())
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := first.election.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Done():
	default:
		t.Fatal("term still live after Leave returned")
	}
	// Leave deleted the node: the next candidate leads without waiting for
	// a session timeout.
	var rest []*candidate
	for _, c := range cs {
		if c != first {
			rest = append(rest, c)
		}
	}
	second := waitOneLeader(t, rest, sessionTimeout/2)
	awaited, err := second.election.Await(ctx)
	if err != nil || awaited != second.election.Current() {
		t.Fatalf("Await = %v, %v; want the live term", awaited, err)
	}
	if e := second.election.Current().Epoch(); e <= term.Epoch() {
		t.Fatalf("new epoch %d not above old %d", e, term.Epoch())
	}
	if first.election.IsLeader() {
		t.Fatal("the nimbus that left still leads")
	}

	// Queue again: it waits behind the others and does not lead.
	first.election.Queue()
	testcluster.WaitFor(t, 5*time.Second, "requeued", func() error {
		children, _, err := first.sess.Conn().Children("/storm/leader-lock")
		if err != nil {
			return err
		}
		if len(children) != 3 {
			return errors.New("want 3 lock nodes")
		}
		return nil
	})
	if l := leaders(cs); len(l) != 1 || l[0] != second {
		t.Fatal("requeueing changed the leader")
	}
}

func TestCrashedLeaderIsReplacedAfterSessionTimeout(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	first := waitOneLeader(t, cs, 10*time.Second)
	// A crash: the network goes and never returns; the session expires on
	// the server.
	first.net.Cut()
	testcluster.WaitFor(t, 2*time.Second, "old term ends at disconnection", func() error {
		if first.election.IsLeader() {
			return errors.New("still leads")
		}
		return nil
	})
	other := cs[0]
	if other == first {
		other = cs[1]
	}
	waitOneLeader(t, []*candidate{other}, sessionTimeout+5*time.Second)
}

func TestExpiredLeaderIsFencedAndRequeues(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	old := waitOneLeader(t, cs, 10*time.Second)
	oldTerm := old.election.Current()
	// The node the terms write: a StormBase whose name says who wrote it.
	const fenced = "fenced-1-1"
	named := func(name string) *clusterv1.StormBase { return &clusterv1.StormBase{Name: name} }
	ops := old.sess.Ops()
	if err := cluster.EnsurePath(old.sess.Conn(), old.sess.Paths().Storms()); err != nil {
		t.Fatal(err)
	}
	if _, err := old.sess.Conn().Create(old.sess.Paths().Storm(fenced), cluster.Encode(named("v0")), 0, old.sess.ACL()); err != nil {
		t.Fatal(err)
	}
	// A write in the term succeeds.
	if _, err := oldTerm.Multi(ops.SetStorm(fenced, named("v1"), cluster.AnyVersion)); err != nil {
		t.Fatalf("fenced write by the live leader: %v", err)
	}

	// Cut the leader off for longer than the session timeout: it steps
	// down at once and another nimbus leads once the session expires.
	old.net.Cut()
	testcluster.WaitFor(t, 2*time.Second, "the cut-off leader steps down", func() error {
		select {
		case <-oldTerm.Done():
			return nil
		default:
			return errors.New("term still live")
		}
	})
	newLeader := cs[0]
	if newLeader == old {
		newLeader = cs[1]
	}
	waitOneLeader(t, []*candidate{newLeader}, sessionTimeout+5*time.Second)
	newTerm := newLeader.election.Current()
	if newTerm.Epoch() <= oldTerm.Epoch() {
		t.Fatalf("new epoch %d not above old %d", newTerm.Epoch(), oldTerm.Epoch())
	}

	// The old leader comes back believing nothing; its session is gone.
	old.net.Restore()
	if _, err := old.sess.WaitSession(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := oldTerm.Multi(ops.SetStorm(fenced, named("stale"), cluster.AnyVersion))
	if !errors.Is(err, leader.ErrFenced) {
		t.Fatalf("write with the expired term: err = %v, want ErrFenced", err)
	}
	// ZooKeeper itself rejects it too: a process paused through its expiry
	// would not have seen its term end.
	_, err = leader.FencedMulti(old.sess.Conn(), oldTerm.Node(), ops.SetStorm(fenced, named("stale"), cluster.AnyVersion))
	if !errors.Is(err, leader.ErrFenced) {
		t.Fatalf("write through the expired lock node: err = %v, want ErrFenced", err)
	}
	data, _, err := newLeader.sess.Conn().Get(newLeader.sess.Paths().Storm(fenced))
	got := new(clusterv1.StormBase)
	if err == nil {
		err = proto.Unmarshal(data, got)
	}
	if err != nil || got.GetName() != "v1" {
		t.Fatalf("fenced node = %q, %v; want v1 unchanged", got.GetName(), err)
	}

	// It re-queues behind the new leader by itself and does not lead.
	testcluster.WaitFor(t, 10*time.Second, "expired nimbus back in the queue", func() error {
		children, _, err := newLeader.sess.Conn().Children("/storm/leader-lock")
		if err != nil {
			return err
		}
		if len(children) != 2 {
			return errors.New("want 2 lock nodes")
		}
		return nil
	})
	if l := leaders(cs); len(l) != 1 || l[0] != newLeader {
		t.Fatal("the expired nimbus took leadership back")
	}
}

func TestBriefDisconnectionSuspendsThenResumesSameEpoch(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	// A long session: the cut below (about a second, go-zookeeper's
	// reconnect pace) stays well inside it.
	c := startCandidateWithSession(t, z.Addr(), 1, nil, 10*time.Second)
	waitOneLeader(t, []*candidate{c}, 10*time.Second)
	term := c.election.Current()
	sid := sessionID(c)

	c.net.Cut()
	testcluster.WaitFor(t, 2*time.Second, "term suspended at disconnection", func() error {
		if c.election.IsLeader() {
			return errors.New("still leads while disconnected")
		}
		return nil
	})
	c.net.Restore()
	waitOneLeader(t, []*candidate{c}, 5*time.Second)
	if got := sessionID(c); got != sid {
		t.Fatalf("session changed during a brief cut (id %#x -> %#x)", sid, got)
	}
	if e := c.election.Current().Epoch(); e != term.Epoch() {
		t.Fatalf("resumed with epoch %d, want %d", e, term.Epoch())
	}
}

func sessionID(c *candidate) int64 {
	_, id, _ := c.sess.State()
	return id
}

func TestIneligibleWinnerGivesTheLockBack(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	notYet := errors.New("missing code for topology t-1")
	var mu sync.Mutex
	eligible := notYet
	gate := func() error { mu.Lock(); defer mu.Unlock(); return eligible }

	blocked := startCandidate(t, z.Addr(), 1, gate)
	testcluster.WaitFor(t, 5*time.Second, "ineligible candidate leaves the queue", func() error {
		children, _, err := blocked.sess.Conn().Children("/storm/leader-lock")
		if err != nil {
			return err
		}
		if len(children) != 0 {
			return errors.New("lock node still there")
		}
		return nil
	})
	if blocked.election.IsLeader() {
		t.Fatal("ineligible candidate leads")
	}
	other := startCandidate(t, z.Addr(), 2, nil)
	waitOneLeader(t, []*candidate{blocked, other}, 5*time.Second)
	if !other.election.IsLeader() {
		t.Fatal("the eligible candidate does not lead")
	}

	// Once it holds the code it queues again and waits its turn.
	mu.Lock()
	eligible = nil
	mu.Unlock()
	blocked.election.Queue()
	other.stop()
	waitOneLeader(t, []*candidate{blocked}, sessionTimeout+5*time.Second)
}

// The cutter fits zk.Dialer.
var _ zk.Dialer = testcluster.NewCutter().Dial

// TestRestartedNimbusClearsItsPast: a nimbus killed while it leads and
// restarted at once (the same address, a new session) removes the lock
// node its earlier process left, and leads, long before that process's
// session would expire; a node of another address is left alone.
func TestRestartedNimbusClearsItsPast(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	const longSession = time.Minute
	old := startCandidateWithSession(t, z.Addr(), 1, nil, longSession)
	waitOneLeader(t, []*candidate{old}, 10*time.Second)
	other := startCandidateWithSession(t, z.Addr(), 2, nil, longSession)
	oldNode := old.election.Current().Node()
	old.net.Cut() // "killed": its session and lock node live on in ZooKeeper

	restarted := startCandidateWithSession(t, z.Addr(), 1, nil, longSession)
	// The old node goes at once, so other (queued second) leads; the
	// restarted process queues behind it. Neither waits for the minute.
	waitOneLeader(t, []*candidate{other, restarted}, 10*time.Second)
	if !other.election.IsLeader() {
		t.Errorf("the restarted nimbus leads ahead of the one queued before it")
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	if ok, _, err := conn.Exists(oldNode); err != nil || ok {
		t.Errorf("the earlier process's lock node %s: exists %v (%v)", oldNode, ok, err)
	}
	if n := len(zkChildren(t, conn, "/storm/leader-lock")); n != 2 {
		t.Errorf("%d lock nodes, want 2 (other's and the restarted one's)", n)
	}
}

func zkChildren(t *testing.T, conn *zk.Conn, path string) []string {
	t.Helper()
	children, _, err := conn.Children(path)
	if err != nil {
		t.Fatal(err)
	}
	return children
}

// TestDeposedLeaderIsFenced: a live leader whose lock node is deleted (a
// deposition, false or not) ends its term within a notification, and
// ZooKeeper refuses whatever it still writes, even through the fence
// directly, as a leader that had not noticed would; the next candidate
// leads and its writes stand.
func TestDeposedLeaderIsFenced(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	old := waitOneLeader(t, cs, 10*time.Second)
	oldTerm := old.election.Current()
	ops := old.sess.Ops()
	const id = "deposed-1-1"
	named := func(name string) *clusterv1.StormBase { return &clusterv1.StormBase{Name: name} }
	if err := cluster.EnsurePath(old.sess.Conn(), old.sess.Paths().Storms()); err != nil {
		t.Fatal(err)
	}
	if _, err := old.sess.Conn().Create(old.sess.Paths().Storm(id), cluster.Encode(named("v0")), 0, old.sess.ACL()); err != nil {
		t.Fatal(err)
	}

	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	_, stat, err := conn.Get(oldTerm.Node())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(oldTerm.Node(), stat.Version); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 2*time.Second, "the deposed leader's term to end", func() error {
		select {
		case <-oldTerm.Done():
			return nil
		default:
			return errors.New("term still live")
		}
	})
	if _, err := oldTerm.Multi(ops.SetStorm(id, named("stale"), cluster.AnyVersion)); !errors.Is(err, leader.ErrFenced) {
		t.Errorf("write with the deposed term: err = %v, want ErrFenced", err)
	}
	if _, err := leader.FencedMulti(old.sess.Conn(), oldTerm.Node(), ops.SetStorm(id, named("stale"), cluster.AnyVersion)); !errors.Is(err, leader.ErrFenced) {
		t.Errorf("write through the deleted lock node: err = %v, want ErrFenced", err)
	}
	next := waitOneLeader(t, cs, 5*time.Second)
	if next.election.Current().Epoch() <= oldTerm.Epoch() {
		t.Errorf("epoch %d after the deposition, want > %d", next.election.Current().Epoch(), oldTerm.Epoch())
	}
	if _, err := next.election.Current().Multi(next.sess.Ops().SetStorm(id, named("v1"), cluster.AnyVersion)); err != nil {
		t.Errorf("the next leader's write: %v", err)
	}
}

// StepDown hands leadership to the next in the queue at once and queues
// the leader again, behind it: still a candidate, no longer first.
func TestStepDownHandsOverAndQueuesAgain(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	first := waitOneLeader(t, cs, 10*time.Second)
	term := first.election.Current()
	if err := first.election.StepDown(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Done():
	default:
		t.Fatal("the term of the nimbus that stepped down had not ended when StepDown returned")
	}
	next := waitOneLeader(t, cs, 5*time.Second)
	if next == first {
		t.Fatal("the nimbus that stepped down leads again")
	}
	waitQueue(t, first, 2)
	if !first.election.Queued() || first.election.IsLeader() {
		t.Fatal("the nimbus that stepped down is not queued, or leads")
	}
	// And it leads again when the other goes.
	next.stop()
	if again := waitOneLeader(t, []*candidate{first}, 10*time.Second); again != first {
		t.Fatal("no leader after the other left")
	}
}

// StepDown to a node further back passes over the nodes before it: they
// queue again behind, and the named one leads. A next that is not queued
// fails the step-down, deletes nothing, and the leader leads again.
func TestStepDownToANamedNodePassesOverTheOthers(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil), startCandidate(t, z.Addr(), 3, nil)}
	first := waitOneLeader(t, cs, 10*time.Second)
	queue := waitQueue(t, first, 3)
	last := byPort(t, cs, queue[2].Info.GetPort())
	passed := byPort(t, cs, queue[1].Info.GetPort())

	if err := first.election.StepDown(t.Context(), "no-such-node"); err == nil {
		t.Fatal("step-down to a node that is not queued: no error")
	}
	if again := waitOneLeader(t, cs, 5*time.Second); again != first {
		t.Fatalf("after a failed step-down %d leads, want %d", again.port(), first.port())
	}
	if after := waitQueue(t, first, 3); after[0].Name != queue[0].Name {
		t.Fatalf("a failed step-down changed the queue head: %s, was %s", after[0].Name, queue[0].Name)
	}

	if err := first.election.StepDown(t.Context(), queue[2].Name); err != nil {
		t.Fatal(err)
	}
	if got := waitOneLeader(t, cs, 5*time.Second); got != last {
		t.Fatalf("%d leads, want %d (the one named)", got.port(), last.port())
	}
	after := waitQueue(t, first, 3)
	if after[0].Name != queue[2].Name {
		t.Fatalf("queue head %s, want %s", after[0].Name, queue[2].Name)
	}
	for _, c := range []*candidate{first, passed} {
		if !c.election.Queued() {
			t.Errorf("%d is no longer queued", c.port())
		}
	}
}

// waitQueue waits until n lock nodes are queued, each with its payload, and
// returns them in order.
func waitQueue(t *testing.T, c *candidate, n int) []cluster.LockEntry {
	t.Helper()
	var q []cluster.LockEntry
	testcluster.WaitFor(t, 5*time.Second, fmt.Sprintf("%d nimbuses queued", n), func() error {
		conn, dir := c.sess.Conn(), c.sess.Paths().LeaderLock()
		children, _, err := conn.Children(dir)
		if err != nil {
			return err
		}
		q = cluster.LockOrder(children)
		for i := range q {
			data, _, err := conn.Get(dir + "/" + q[i].Name)
			if err != nil {
				return err
			}
			q[i].Info = new(clusterv1.NimbusInfo)
			if err := cluster.Decode(q[i].Name, data, q[i].Info); err != nil {
				return err
			}
		}
		if len(q) != n {
			return fmt.Errorf("%d queued", len(q))
		}
		return nil
	})
	return q
}

func byPort(t *testing.T, cs []*candidate, port int32) *candidate {
	t.Helper()
	for _, c := range cs {
		if c.port() == port {
			return c
		}
	}
	t.Fatalf("no candidate on port %d", port)
	return nil
}

// A follower asked to step down does nothing: only a leader hands over.
func TestStepDownOfAFollowerDoesNothing(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cs := []*candidate{startCandidate(t, z.Addr(), 1, nil), startCandidate(t, z.Addr(), 2, nil)}
	first := waitOneLeader(t, cs, 10*time.Second)
	queue := waitQueue(t, first, 2)
	follower := byPort(t, cs, queue[1].Info.GetPort())
	if err := follower.election.StepDown(t.Context(), ""); !errors.Is(err, leader.ErrNotLeading) {
		t.Fatalf("a follower's step-down: %v, want ErrNotLeading", err)
	}
	if after := waitQueue(t, first, 2); after[0].Name != queue[0].Name || after[1].Name != queue[1].Name {
		t.Fatalf("the queue changed: %v, was %v", after, queue)
	}
}
