package integration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestThreeNimbusesAgreeOnOneLeader(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	ps := c.StartNimbuses(t, 3)
	epoch, leader := c.WaitLeader(t, ps, 10*time.Second)
	if epoch < 1 {
		t.Fatalf("leader epoch %d, want >= 1", epoch)
	}

	// Every nimbus lists all three, exactly one as leader, with the epoch.
	for _, p := range ps {
		resp, err := c.API(p).GetClusterInfo(t.Context(), &nimbusv1.GetClusterInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		nimbuses := resp.GetCluster().GetNimbuses()
		if len(nimbuses) != 3 {
			t.Fatalf("%s lists %d nimbuses, want 3", p.Name, len(nimbuses))
		}
		var leaders int
		for _, n := range nimbuses {
			if n.GetVersion() == "" {
				t.Errorf("%s: nimbus %s:%d has no version", p.Name, n.GetHost(), n.GetPort())
			}
			if n.GetIsLeader() {
				leaders++
				if n.GetEpoch() != epoch || fmt.Sprintf("%s:%d", n.GetHost(), n.GetPort()) != leader.Addr() {
					t.Errorf("%s: leader entry %v, want %s epoch %d", p.Name, n, leader.Addr(), epoch)
				}
			} else if n.GetEpoch() != 0 {
				t.Errorf("%s: follower %s:%d reports epoch %d", p.Name, n.GetHost(), n.GetPort(), n.GetEpoch())
			}
		}
		if leaders != 1 {
			t.Fatalf("%s lists %d leaders", p.Name, leaders)
		}
	}

	// Health: overall SERVING everywhere; the leader service only on the leader.
	for _, p := range ps {
		testcluster.WaitFor(t, 5*time.Second, p.Name+" health", func() error {
			overall, err := c.Health(p, "")
			if err != nil {
				return err
			}
			lead, err := c.Health(p, nimbusv1.LeaderHealthService)
			if err != nil {
				return err
			}
			wantLead := healthpb.HealthCheckResponse_NOT_SERVING
			if p == leader {
				wantLead = healthpb.HealthCheckResponse_SERVING
			}
			if overall != healthpb.HealthCheckResponse_SERVING || lead != wantLead {
				return fmt.Errorf("overall %v, leader service %v (want %v)", overall, lead, wantLead)
			}
			return nil
		})
	}

	// Metrics: the leader gauge is 1 on the leader only.
	for _, p := range ps {
		want := "nimbus_is_leader 0"
		if p == leader {
			want = "nimbus_is_leader 1"
		}
		testcluster.WaitFor(t, 5*time.Second, p.Name+" metrics", func() error {
			body, err := p.Metrics()
			if err != nil {
				return err
			}
			if !strings.Contains(body, want) {
				return errors.New("metrics lack " + want)
			}
			return nil
		})
	}

	// Leader-only RPCs: the leader answers (NotFound for an unknown name),
	// a follower answers with the leader's address.
	_, err := c.API(leader).ActivateTopology(t.Context(), &nimbusv1.ActivateTopologyRequest{Name: "nosuch"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("ActivateTopology of an unknown name on the leader: %v, want NotFound", err)
	}
	follower := testcluster.Without(ps, leader)[0]
	_, err = c.API(follower).ActivateTopology(t.Context(), &nimbusv1.ActivateTopologyRequest{Name: "nosuch"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).String(), leader.Addr()) {
		t.Fatalf("ActivateTopology on a follower: %v, want FailedPrecondition naming %s", err, leader.Addr())
	}
}

func TestSIGTERMLeaderHandsOverWithoutWaitingForTheSession(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	// A long session timeout: a new leader before it passes proves the
	// stopping leader handed over by deleting its lock node.
	const session = 20 * time.Second
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(session))
	ps := c.StartNimbuses(t, 3)
	epoch, leader := c.WaitLeader(t, ps, 10*time.Second)

	if err := leader.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := leader.ExitErr(); err != nil {
		t.Fatalf("leader exited with %v after SIGTERM, want 0", err)
	}
	rest := testcluster.Without(ps, leader)
	newEpoch, _ := c.WaitLeader(t, rest, session/4)
	if newEpoch <= epoch {
		t.Fatalf("epoch %d after handover, want > %d", newEpoch, epoch)
	}
}

// A SIGKILLed leader is deposed by a follower (its port refuses
// connections) and replaced at once, not after its 20 s session.
func TestSIGKILLedLeaderIsDeposed(t *testing.T) {
	const session = 20 * time.Second
	c, epoch, leader, rest := threeQueued(t, session)

	if err := leader.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	newEpoch, _ := c.WaitLeader(t, rest, session/4)
	if newEpoch <= epoch {
		t.Fatalf("epoch %d after crash, want > %d", newEpoch, epoch)
	}
	t.Logf("a new leader %v after SIGKILL (session %v)", time.Since(killed).Round(time.Millisecond), session)
	// Counted after the delete's answer, which may come after the election.
	testcluster.WaitFor(t, 5*time.Second, "one deposition counted by the followers", func() error {
		if n := depositions(t, rest...); n != 1 {
			return fmt.Errorf("%v depositions", n)
		}
		return nil
	})
}

// A stopped leader (SIGSTOP: its port still accepts) is not provably
// dead: nobody deposes it, and failover waits for its session, as it must.
func TestSIGSTOPedLeaderIsNotDeposed(t *testing.T) {
	const session = 4 * time.Second
	c, epoch, leader, rest := threeQueued(t, session)

	if err := leader.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leader.Signal(syscall.SIGCONT) })
	stopped := time.Now()
	newEpoch, _ := c.WaitLeader(t, rest, session+10*time.Second)
	if waited := time.Since(stopped); waited < session/2 || newEpoch <= epoch {
		t.Errorf("a new leader (epoch %d, was %d) %v after SIGSTOP, want one after the %v session", newEpoch, epoch, waited, session)
	}
	if n := depositions(t, rest...); n != 0 {
		t.Errorf("%v depositions of a stopped leader, want 0", n)
	}
}

// threeQueued starts three nimbuses with session, and returns once one
// leads and all three are queued: the cluster, the leader's epoch, the
// leader and the others.
func threeQueued(t *testing.T, session time.Duration) (*testcluster.Cluster, int64, *testcluster.Process, []*testcluster.Process) {
	t.Helper()
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(session))
	ps := c.StartNimbuses(t, 3)
	epoch, leader := c.WaitLeader(t, ps, 10*time.Second)
	c.WaitQueued(t, 3, 10*time.Second)
	return c, epoch, leader, testcluster.Without(ps, leader)
}

// depositions sums nimbus_depositions_total over ps.
func depositions(t *testing.T, ps ...*testcluster.Process) float64 {
	t.Helper()
	var sum float64
	for _, p := range ps {
		page, err := p.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(page) {
			if strings.HasPrefix(line, "nimbus_depositions_total{") {
				v, _ := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndex(line, " "):]), 64)
				sum += v
			}
		}
	}
	return sum
}

func TestRestartedNimbusRejoinsOnTheSameAddress(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	ps := c.StartNimbuses(t, 3)
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	follower := testcluster.Without(ps, leader)[0]
	port := follower.Addr()[strings.LastIndex(follower.Addr(), ":")+1:]

	// Crash and restart at once: the old session still holds its nodes.
	if err := follower.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var portNum int
	fmt.Sscan(port, &portNum)
	restarted, err := c.StartNimbus(testcluster.WithPort(portNum))
	if err != nil {
		t.Fatal(err)
	}
	live := append(testcluster.Without(ps, follower), restarted)
	c.WaitLeader(t, live, 10*time.Second)

	// It is registered by its new session, and once the old session
	// expires the queue holds exactly the three live nimbuses.
	c.WaitQueued(t, 3, 15*time.Second)
	resp, err := c.API(restarted).GetClusterInfo(t.Context(), &nimbusv1.GetClusterInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetCluster().GetNimbuses()); n != 3 {
		t.Fatalf("restarted nimbus lists %d nimbuses, want 3", n)
	}
}

// A lone leader SIGKILLed and restarted at once (its port, its local dir:
// what systemd does) removes its earlier process's lock node and leads
// again at once, not after the 20 s session; nothing acknowledged is lost.
func TestRestartedLeaderLeadsAtOnce(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	const session = 20 * time.Second
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(session))
	n := c.StartNimbuses(t, 1)[0]
	epoch, _ := c.WaitLeader(t, []*testcluster.Process{n}, 10*time.Second)
	id := submit(t, newClient(t, c, n), "kept", randomBytes(t, 1000)).GetTopologyId()
	var port int
	fmt.Sscan(n.Addr()[strings.LastIndex(n.Addr(), ":")+1:], &port)

	if err := n.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	restarted, err := c.StartNimbus(testcluster.WithPort(port), testcluster.WithLocalDir(n.LocalDir))
	if err != nil {
		t.Fatal(err)
	}
	newEpoch, _ := c.WaitLeader(t, []*testcluster.Process{restarted}, session/4)
	t.Logf("leading again %v after SIGKILL (session %v), the restart included", time.Since(killed).Round(time.Millisecond), session)
	if newEpoch <= epoch {
		t.Errorf("epoch %d after the restart, want > %d", newEpoch, epoch)
	}
	info, err := c.API(restarted).GetTopologyInfo(t.Context(), &nimbusv1.GetTopologyInfoRequest{Name: "kept"})
	if err != nil || info.GetTopology().GetId() != id {
		t.Errorf("the acknowledged topology after the restart: %v, %v", info.GetTopology(), err)
	}
}

// A false deposition (the live leader's lock node deleted by hand): the
// old leader stops leading within a notification and sends leader-only
// requests elsewhere, a leader is elected, and nothing acknowledged is
// lost.
func TestFalseDepositionLosesNothing(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(20*time.Second))
	ps := c.StartNimbuses(t, 2)
	epoch, old := c.WaitLeader(t, ps, 10*time.Second)
	c.WaitQueued(t, 2, 10*time.Second)
	data := randomBytes(t, 1000)
	id := submit(t, newClient(t, c, ps...), "acked", data).GetTopologyId()
	// The follower takes over only once it holds the code: until then it
	// is out of the queue, and the deposed leader would simply lead again.
	testcluster.WaitFor(t, 10*time.Second, "every nimbus to hold the code", func() error {
		for _, p := range ps {
			if err := holds(p, id, data); err != nil {
				return err
			}
		}
		return nil
	})
	c.WaitQueued(t, 2, 10*time.Second)

	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	order := cluster.LockOrder(zkChildren(t, conn, "/storm/leader-lock"))
	head := "/storm/leader-lock/" + order[0].Name
	_, stat, err := conn.Get(head)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(head, stat.Version); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the deposed leader to stop acting as leader", func() error {
		if st, err := c.Health(old, nimbusv1.LeaderHealthService); err != nil || st.String() == "SERVING" {
			return fmt.Errorf("%v %v", st, err)
		}
		return nil
	})
	newEpoch, _ := c.WaitLeader(t, ps, 10*time.Second)
	if newEpoch <= epoch {
		t.Errorf("epoch %d after the deposition, want > %d", newEpoch, epoch)
	}
	for _, p := range ps {
		info, err := c.API(p).GetTopologyInfo(t.Context(), &nimbusv1.GetTopologyInfoRequest{Name: "acked"})
		if err != nil || info.GetTopology().GetId() != id || info.GetTopology().GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE {
			t.Errorf("%s: the acknowledged topology after the deposition: %v, %v", p.Name, info.GetTopology(), err)
		}
	}
	// The cluster still acts: a kill through the SDK reaches the new leader.
	zero := int32(0)
	if err := newClient(t, c, ps...).KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "acked", WaitSecs: &zero}); err != nil {
		t.Errorf("kill after the deposition: %v", err)
	}
}

// A live leader behind a firewall that resets every connection to its port
// (its followers' streams killed, each probe refused) is not deposed: it
// answers their challenges through ZooKeeper, and the leader stays.
func TestLeaderBehindAResetRuleIsNotDeposed(t *testing.T) {
	const session = 20 * time.Second
	c, epoch, leader, rest := threeQueued(t, session)
	port, err := strconv.Atoi(leader.Addr()[strings.LastIndex(leader.Addr(), ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	restore := testcluster.RejectPort(t, port)
	testcluster.WaitFor(t, 10*time.Second, "both followers' challenges answered", func() error {
		for _, p := range rest {
			if n := metricSum(t, p, `nimbus_deposition_challenges_total{outcome="answered"}`); n < 1 {
				return fmt.Errorf("%s: %v answered", p.Name, n)
			}
		}
		return nil
	})
	// Streams keep breaking and probes keep being refused meanwhile.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); <-tick.C {
		for _, p := range rest { // the leader's port refuses: ask the followers
			resp, err := c.API(p).GetLeader(t.Context(), &nimbusv1.GetLeaderRequest{})
			if err == nil && resp.GetLeader().GetEpoch() != epoch {
				t.Fatalf("%s sees epoch %d behind a reset rule, was %d: a live leader was deposed", p.Name, resp.GetLeader().GetEpoch(), epoch)
			}
		}
	}
	if n := depositions(t, rest...); n != 0 {
		t.Fatalf("%v depositions of a live leader, want 0", n)
	}
	restore()
	if now, l := c.WaitLeader(t, append(rest, leader), 5*time.Second); now != epoch || l != leader {
		t.Fatalf("after the rule: %s leads at epoch %d, want %s at %d", l.Name, now, leader.Name, epoch)
	}
}

// metricSum is the value of the series named exactly series (name and
// labels) on p's metrics port, 0 if absent.
func metricSum(t *testing.T, p *testcluster.Process, series string) float64 {
	t.Helper()
	page, err := p.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(page) {
		if strings.HasPrefix(line, series+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(line[len(series):]), 64)
			return v
		}
	}
	return 0
}
