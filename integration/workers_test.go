package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// submitExample submits the example worker program as a topology.
func submitExample(t *testing.T, cl *client.Client, name string, workers int32) string {
	t.Helper()
	data, err := os.ReadFile(testcluster.Bin(t).Path("wordcount"))
	if err != nil {
		t.Fatal(err)
	}
	spec := &nimbusv1.TopologySpec{
		Name: name, NumWorkers: workers,
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentence", Parallelism: 1}, {Id: "split", Parallelism: 2}, {Id: "count", Parallelism: 3}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, strings.NewReader(string(data)), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetTopologyId()
}

// askWorker asks the example worker on port what it runs.
func askWorker(port int32) (string, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	return bufio.NewReader(conn).ReadString('\n')
}

// supervisorInfo reads a supervisor's heartbeat from ZooKeeper.
func supervisorInfo(t *testing.T, conn *zk.Conn, id string) (*clusterv1.SupervisorInfo, error) {
	data, _, err := conn.Get("/storm/supervisors/" + id)
	if err != nil {
		return nil, err
	}
	info := new(clusterv1.SupervisorInfo)
	return info, cluster.Decode(id, data, info)
}

// runningWorkers maps port to pid over the supervisors' heartbeats,
// counting only running workers that answer on their port for topology.
func runningWorkers(t *testing.T, conn *zk.Conn, topology string, sups ...*testcluster.Process) (map[int32]int32, error) {
	out := map[int32]int32{}
	for _, s := range sups {
		info, err := supervisorInfo(t, conn, s.ID())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		for _, w := range info.GetWorkers() {
			if w.GetTopologyId() != topology || w.GetState() != "running" {
				continue
			}
			reply, err := askWorker(w.GetPort())
			if err != nil || !strings.Contains(reply, topology) {
				return nil, fmt.Errorf("worker on %d: %q %v", w.GetPort(), reply, err)
			}
			out[w.GetPort()] = w.GetPid()
		}
	}
	return out, nil
}

// waitWorkers waits until exactly n workers of topology run (answering on
// their ports) on sups, and returns them by port.
func waitWorkers(t *testing.T, conn *zk.Conn, topology string, n int, timeout time.Duration, sups ...*testcluster.Process) map[int32]int32 {
	t.Helper()
	var workers map[int32]int32
	testcluster.WaitFor(t, timeout, fmt.Sprintf("%d workers of %s", n, topology), func() error {
		var err error
		workers, err = runningWorkers(t, conn, topology, sups...)
		if err == nil && len(workers) != n {
			err = fmt.Errorf("%d workers", len(workers))
		}
		return err
	})
	return workers
}

func TestWorkersRunWithTheirEnvironmentAndStopOnKill(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 2)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	id := submitExample(t, cl, "wc", 2)

	workers := waitWorkers(t, conn, id, 2, 20*time.Second, sups...)
	// The environment the supervisor gave them.
	for port, pid := range workers {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		vars := strings.Split(string(env), "\x00")
		for _, want := range []string{"STORM_TOPOLOGY_ID=" + id, fmt.Sprintf("STORM_PORT=%d", port), "STORM_EXECUTORS=", "STORM_CODE_DIR="} {
			if !slices.ContainsFunc(vars, func(v string) bool { return strings.HasPrefix(v, want) }) {
				t.Errorf("worker %d lacks %s", pid, want)
			}
		}
	}
	info, err := cl.GetTopologyInfo(t.Context(), "wc")
	if err != nil || len(info.GetExecutors()) != 6 {
		t.Fatalf("GetTopologyInfo executors: %v, %v", info.GetExecutors(), err)
	}
	out, _, code := stormctl(t, append(c.ClientFlags(), "--seeds", ps[0].Addr(), "supervisors")...)
	if code != 0 || !strings.Contains(out, sups[0].ID()) || !strings.Contains(out, sups[1].ID()) {
		t.Fatalf("stormctl supervisors: exit %d\n%s", code, out)
	}

	zero := int32(0)
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "wc", WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "workers stopped and code removed", func() error {
		for port, pid := range workers {
			if syscall.Kill(int(pid), 0) == nil {
				return fmt.Errorf("worker %d on port %d still runs", pid, port)
			}
		}
		for _, s := range sups {
			entries, err := os.ReadDir(s.LocalDir + "/supervisor/code")
			if err != nil || len(entries) != 0 {
				return fmt.Errorf("%s still holds code (%v)", s.Name, err)
			}
		}
		return nil
	})
}

func TestSupervisorCrashMovesItsWorkersAndItRejoinsAsItself(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	const session = 2 * time.Second
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(session))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--nimbus.supervisor.timeout.secs", "6"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 2)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "movable", 2)
	testcluster.WaitFor(t, 20*time.Second, "a worker on each supervisor", func() error {
		for _, s := range sups {
			if w, err := runningWorkers(t, conn, id, s); err != nil || len(w) != 1 {
				return fmt.Errorf("%s: %v workers, %v", s.Name, w, err)
			}
		}
		return nil
	})

	victim, survivor := sups[0], sups[1]
	victimID := victim.ID()
	if err := victim.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// Its worker died with it; once its session expires both workers run
	// on the survivor.
	testcluster.WaitFor(t, session+15*time.Second, "both workers on the survivor", func() error {
		w, err := runningWorkers(t, conn, id, survivor)
		if err != nil || len(w) != 2 {
			return fmt.Errorf("%v, %v", w, err)
		}
		return nil
	})

	back, err := c.StartSupervisor(testcluster.WithLocalDir(victim.LocalDir))
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != victimID {
		t.Fatalf("restarted supervisor is %s, was %s", back.ID(), victimID)
	}
}

func TestLeaderCrashRestartsNoWorker(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--topology.min.replication.count", "2"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 2)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "steady", 3)
	before := waitWorkers(t, conn, id, 3, 20*time.Second, sups...)
	if err := leader.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, testcluster.Without(ps, leader), 15*time.Second)
	// Give the new leader several monitor rounds to (wrongly) move things.
	testcluster.WaitFor(t, 10*time.Second, "the new leader's rounds", func() error {
		cs := clusterSummary(t, c, testcluster.Without(ps, leader)[0])
		if len(cs.GetSupervisors()) != 2 {
			return fmt.Errorf("%d supervisors", len(cs.GetSupervisors()))
		}
		return nil
	})
	<-time.After(3 * time.Second) // three monitor periods: the observation window, not a sync
	after, err := runningWorkers(t, conn, id, sups...)
	if err != nil {
		t.Fatal(err)
	}
	for port, pid := range before {
		if after[port] != pid {
			t.Fatalf("worker on %d was %d, now %d: restarted across a leader crash", port, pid, after[port])
		}
	}
}

func TestCrashedWorkerIsRestarted(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "fragile", 1)
	before := waitWorkers(t, conn, id, 1, 20*time.Second, sups...)
	for _, pid := range before {
		if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	testcluster.WaitFor(t, 15*time.Second, "the worker back with a new pid and a restart counted", func() error {
		info, err := supervisorInfo(t, conn, sups[0].ID())
		if err != nil {
			return err
		}
		for _, w := range info.GetWorkers() {
			if w.GetState() == "running" && before[w.GetPort()] != 0 && w.GetPid() != before[w.GetPort()] && w.GetRestarts() >= 1 {
				return nil
			}
		}
		return fmt.Errorf("workers %v", info.GetWorkers())
	})
	// The supervisor's metrics say the same.
	testcluster.WaitFor(t, 5*time.Second, "the supervisor's metrics", func() error {
		body, err := sups[0].Metrics()
		for _, want := range []string{`supervisor_workers{state="running"} 1`, "supervisor_worker_restarts 1"} {
			if err == nil && !strings.Contains(body, want) {
				err = errors.New("metrics lack " + want)
			}
		}
		return err
	})
}

func TestRebalanceTwoToFourWorkersAndBack(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	var sups []*testcluster.Process
	for range 2 {
		p, err := c.StartSupervisor(testcluster.WithSlots(testcluster.FreePorts(t, 3)...))
		if err != nil {
			t.Fatal(err)
		}
		sups = append(sups, p)
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	id := submitExample(t, cl, "elastic", 2)
	workersBecome := func(n int) { t.Helper(); waitWorkers(t, conn, id, n, 30*time.Second, sups...) }
	workersBecome(2)
	zero, four, two := int32(0), int32(4), int32(2)
	if err := cl.RebalanceTopology(t.Context(), &nimbusv1.RebalanceTopologyRequest{Name: "elastic", WaitSecs: &zero, NumWorkers: &four,
		ComponentParallelism: map[string]int32{"count": 5}}); err != nil {
		t.Fatal(err)
	}
	workersBecome(4)
	testcluster.WaitFor(t, 10*time.Second, "8 executors", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), "elastic")
		if err != nil {
			return err
		}
		if n := len(info.GetExecutors()); n != 8 || info.GetTopology().GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE {
			return fmt.Errorf("%d executors, status %v", n, info.GetTopology().GetStatus())
		}
		return nil
	})
	if err := cl.RebalanceTopology(t.Context(), &nimbusv1.RebalanceTopologyRequest{Name: "elastic", WaitSecs: &zero, NumWorkers: &two}); err != nil {
		t.Fatal(err)
	}
	workersBecome(2)
	if err := cl.RebalanceTopology(t.Context(), &nimbusv1.RebalanceTopologyRequest{Name: "elastic", ComponentParallelism: map[string]int32{"nosuch": 2}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("rebalance of an unknown component: %v, want InvalidArgument", err)
	}
}

// Invariant 7: ZooKeeper away for twice the session timeout; workers keep
// running (same pids), and when it returns the cluster converges with one
// worker per slot.
func TestWorkersSurviveZooKeeperOutage(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	const session = 2 * time.Second
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(session))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 2)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "durable", 2)
	before := waitWorkers(t, conn, id, 2, 20*time.Second, sups...)

	z.Stop()
	// The outage's length is the point of the test, not a wait for a
	// condition.
	<-time.After(2 * session)
	for port, pid := range before {
		if syscall.Kill(int(pid), 0) != nil {
			t.Fatalf("worker %d on port %d died while ZooKeeper was away", pid, port)
		}
		if reply, err := askWorker(port); err != nil || !strings.Contains(reply, id) {
			t.Fatalf("worker on %d does not answer during the outage: %q %v", port, reply, err)
		}
	}
	z.Start()

	testcluster.WaitFor(t, 30*time.Second, "the cluster converged: same workers, one per slot", func() error {
		after, err := runningWorkers(t, conn, id, sups...)
		if err != nil {
			return err
		}
		if len(after) != 2 {
			return fmt.Errorf("%d workers", len(after))
		}
		for port, pid := range before {
			if after[port] != pid {
				return fmt.Errorf("worker on %d is %d, was %d", port, after[port], pid)
			}
		}
		return nil
	})
}

// A worker command that fails at once backs off, visibly, without a busy
// loop.
func TestFailingWorkerCommandBacksOff(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	spec := testSpec("broken")
	spec.NumWorkers = 1
	spec.WorkerCommand = []string{"/bin/false"}
	data := randomBytes(t, 100)
	if _, err := cl.SubmitTopology(t.Context(), spec, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testcluster.WaitFor(t, 20*time.Second, "the worker in backoff with restarts counted", func() error {
		info, err := supervisorInfo(t, conn, sups[0].ID())
		if err != nil {
			return err
		}
		for _, w := range info.GetWorkers() {
			if w.GetState() == "backoff" && w.GetRestarts() >= 3 && w.GetLastError() != "" {
				return nil
			}
		}
		return fmt.Errorf("workers %v", info.GetWorkers())
	})
	// Backoff doubles from 1 s: three restarts take at least 1+2 s. A busy
	// loop would have made hundreds.
	elapsed := time.Since(start)
	info, err := supervisorInfo(t, conn, sups[0].ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range info.GetWorkers() {
		if max := int32(elapsed/time.Second) + 2; w.GetRestarts() > max {
			t.Fatalf("%d restarts in %v: no backoff", w.GetRestarts(), elapsed)
		}
	}
}

// Invariant 7 across a supervisor restart: with no nimbus up, a restarted
// supervisor runs its workers again from the code it kept.
func TestSupervisorRestartWithoutNimbusRunsItsWorkers(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "standalone", 1)
	waitWorkers(t, conn, id, 1, 20*time.Second, sups...)
	ports := slotPorts(t, conn, sups[0].ID())
	if err := ps[0].Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := sups[0].Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	back, err := c.StartSupervisor(testcluster.WithLocalDir(sups[0].LocalDir), testcluster.WithSlots(ports...))
	if err != nil {
		t.Fatal(err)
	}
	waitWorkers(t, conn, id, 1, 20*time.Second, back) // with no nimbus up
}

// slotPorts reads the slot ports a supervisor registered with.
func slotPorts(t *testing.T, conn *zk.Conn, id string) []int {
	t.Helper()
	var ports []int
	testcluster.WaitFor(t, 10*time.Second, "the supervisor's registration", func() error {
		info, err := supervisorInfo(t, conn, id)
		if err != nil {
			return err
		}
		ports = nil
		for _, p := range info.GetSlotPorts() {
			ports = append(ports, int(p))
		}
		return nil
	})
	return ports
}

// A supervisor SIGKILLed and restarted at once (its local dir, its slots)
// is itself again and runs its workers again within seconds, not after
// its predecessor's 20 s session: it replaces the stale registration, and
// the leader keeps its assignment.
func TestRestartedSupervisorRunsItsWorkersAtOnce(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	const session = 20 * time.Second
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(session))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	slots := testcluster.FreePorts(t, 2)
	sup, err := c.StartSupervisor(testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "steady", 1)
	var before map[int32]int32
	testcluster.WaitFor(t, 20*time.Second, "its worker running", func() error {
		var err error
		if before, err = runningWorkers(t, conn, id, sup); err != nil || len(before) != 1 {
			return fmt.Errorf("%v workers, %v", before, err)
		}
		return nil
	})
	_, stat, err := conn.Get("/storm/supervisors/" + sup.ID())
	if err != nil {
		t.Fatal(err)
	}
	oldSession := stat.EphemeralOwner
	if err := sup.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	back, err := c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != sup.ID() {
		t.Fatalf("restarted supervisor is %s, was %s", back.ID(), sup.ID())
	}
	testcluster.WaitFor(t, session/2, "its worker running again, reported by the new process", func() error {
		_, stat, err := conn.Get("/storm/supervisors/" + back.ID())
		if err != nil {
			return err
		}
		if stat.EphemeralOwner == oldSession {
			return fmt.Errorf("still the killed process's registration (session 0x%x)", oldSession)
		}
		w, err := runningWorkers(t, conn, id, back)
		if err != nil || len(w) != 1 {
			return fmt.Errorf("%v workers, %v", w, err)
		}
		t.Logf("workers before %v, after %v", before, w)
		return nil
	})
	t.Logf("its worker running again %v after SIGKILL (session %v), the restart included", time.Since(killed).Round(time.Millisecond), session)
}
