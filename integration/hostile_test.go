package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Hostile ZooKeeper state: what an operator's recursive delete, a tool
// writing the wrong bytes, or a runaway script can do to /storm while the
// cluster runs. Workers here are sleep processes, so that submitting is
// cheap and a worker's life is its pid.
//
// What the daemons do, decided here:
//   - The root deleted: an outage, not an empty cluster (package clusterid,
//     docs/ARCHITECTURE.md section 19). Every daemon logs, at error level,
//     that the root was deleted, naming it, and re-creates the directories
//     of the layout and its own nodes (registrations); no nimbus leads,
//     workers run on and code stays, until the state is put back (a
//     snapshot restored: wipedroot_test.go) or the operator starts a new
//     cluster by removing the daemons' cluster-id files, after which the
//     daemons elect a leader, drop what the old cluster ran and take new
//     submissions.
//   - Garbage in a node (or a payload that parses but lacks what every
//     writer sets, as an empty node): logged naming the node, never fatal.
//     A node that was readable keeps, in every cache, its last readable
//     payload, so garbage written over it changes nothing anyone does; one
//     that never was is skipped (a topology listed by id only, with no
//     status; supervisors and nimbuses left out). The owner of a node puts
//     its payload back: a nimbus its registration and replica nodes at
//     once, a supervisor its node at its next heartbeat, the leader an
//     assignment. A StormBase is the operator's to fix: the leader does
//     not schedule what it cannot read, and it costs no nimbus its place in
//     the leader queue.
//   - Thousands of junk children: read, logged in bounded volume, skipped.

// sleepSpec is a topology whose workers sleep.
func sleepSpec(name string, workers int32) *nimbusv1.TopologySpec {
	return &nimbusv1.TopologySpec{
		Name: name, NumWorkers: workers,
		Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: workers}},
		WorkerCommand: []string{"/bin/sleep", "3600"},
	}
}

func submitSleeper(t *testing.T, cl *client.Client, name string, workers int32) *nimbusv1.SubmitTopologyResponse {
	t.Helper()
	data := randomBytes(t, 1024)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, sleepSpec(name, workers), bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return resp
}

// sleepers waits until exactly n workers of topology run on sups, by their
// heartbeats and the pids being alive, and returns their pids by port.
func sleepers(t *testing.T, conn *zk.Conn, topology string, n int, timeout time.Duration, sups ...*testcluster.Process) map[int32]int32 {
	t.Helper()
	var out map[int32]int32
	testcluster.WaitFor(t, timeout, fmt.Sprintf("%d workers of %s", n, topology), func() error {
		out = map[int32]int32{}
		for _, s := range sups {
			info, err := supervisorInfo(t, conn, s.ID())
			if err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			for _, w := range info.GetWorkers() {
				if w.GetTopologyId() == topology && w.GetState() == "running" {
					if syscall.Kill(int(w.GetPid()), 0) != nil {
						return fmt.Errorf("worker %d of %s is not alive", w.GetPid(), topology)
					}
					out[w.GetPort()] = w.GetPid()
				}
			}
		}
		if len(out) != n {
			return fmt.Errorf("%d workers", len(out))
		}
		return nil
	})
	return out
}

// garbage writes random bytes into an existing node, or creates it with
// them. Decode rejects them even if they happen to parse: every payload
// kind needs fields random bytes do not make.
func garbage(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	data := randomBytes(t, 200)
	if _, err := conn.Set(path, data, -1); err == zk.ErrNoNode {
		_, err = conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
	} else if err != nil {
		t.Fatalf("set %s: %v", path, err)
	}
}

// readable reads path and checks that it decodes into m.
func readable(conn *zk.Conn, path string, m proto.Message) error {
	data, _, err := conn.Get(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return cluster.Decode(path, data, m)
}

// logged checks that p's log has a line with message msg and, for each
// key of attrs, that attribute's value.
func logged(p *testcluster.Process, msg string, attrs map[string]string) error {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(msg)) {
			continue
		}
		var entry map[string]any
		if json.Unmarshal(sc.Bytes(), &entry) != nil || entry["msg"] != msg {
			continue
		}
		match := true
		for k, v := range attrs {
			if fmt.Sprint(entry[k]) != v {
				match = false
			}
		}
		if match {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s has not logged %q with %v", p.Name, msg, attrs)
}

// countLogged counts p's log lines with message msg.
func countLogged(t *testing.T, p *testcluster.Process, msg string) int {
	t.Helper()
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte(`"msg":"`+msg+`"`))
}

func waitLogged(t *testing.T, p *testcluster.Process, msg string, attrs map[string]string) {
	t.Helper()
	testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("%s to log %q %v", p.Name, msg, attrs), func() error {
		return logged(p, msg, attrs)
	})
}

func allRunning(t *testing.T, ps ...*testcluster.Process) {
	t.Helper()
	for _, p := range ps {
		if !p.Running() {
			t.Fatalf("%s exited: %v\n%s", p.Name, p.ExitErr(), p.Tail(30))
		}
	}
}

// The /storm root deleted by hand while a topology runs: the daemons say
// so and re-create what they own, but nobody leads and nothing is stopped
// or removed: an outage. The operator then starts a new cluster on the
// same hosts (the cluster-id files removed, the daemons restarted): a
// leader again, the old topology's workers and code gone, and new
// submissions taken.
func TestHostileRootDeleted(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	nimbusArgs := testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--topology.min.replication.count", "2")
	ps := c.StartNimbuses(t, 2, nimbusArgs)
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	before := submitSleeper(t, cl, "before", 2).GetTopologyId()
	workers := sleepers(t, conn, before, 2, 20*time.Second, sups...)

	testcluster.DeleteTree(t, conn, "/storm", 10*time.Second)

	// Every daemon reports the root, by name.
	for _, p := range append(ps, sups...) {
		waitLogged(t, p, "ZooKeeper root was deleted: its topologies and assignments are gone; re-creating this daemon's nodes",
			map[string]string{"level": "ERROR", "root": "/storm"})
	}
	// An outage: registered again, nobody leads, the workers run on.
	testcluster.WaitFor(t, 10*time.Second, "the supervisor registered again", func() error {
		_, err := supervisorInfo(t, conn, sups[0].ID())
		return err
	})
	for _, p := range ps {
		testcluster.WaitFor(t, 10*time.Second, p.Name+" reporting the outage", func() error {
			if problem := clusterSummary(t, c, p).GetClusterStateProblem(); !strings.Contains(problem, "gone from ZooKeeper") {
				return fmt.Errorf("%q", problem)
			}
			return nil
		})
	}
	for port, pid := range workers {
		if !processRuns(int(pid)) {
			t.Fatalf("worker %d on port %d stopped in the outage", pid, port)
		}
	}

	// A new cluster on the same hosts: each daemon forgets the old one.
	for _, p := range append(slices.Clone(ps), sups...) {
		files, _ := filepath.Glob(filepath.Join(p.LocalDir, "*", "cluster-id"))
		for _, f := range files {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, p := range ps {
		if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		var err error
		if ps[i], err = c.StartNimbus(testcluster.WithLocalDir(p.LocalDir), nimbusArgs); err != nil {
			t.Fatal(err)
		}
	}
	if err := sups[0].Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var err error
	if sups[0], err = c.StartSupervisor(testcluster.WithLocalDir(sups[0].LocalDir)); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, ps, 15*time.Second)
	c.WaitQueued(t, 2, 10*time.Second)
	cl = newClient(t, c, ps...) // on their new ports
	// The topology is gone: its workers stopped, its code removed from
	// every node, and no nimbus lists it.
	testcluster.WaitFor(t, 20*time.Second, "the vanished topology's workers stopped and code removed", func() error {
		for port, pid := range workers {
			if syscall.Kill(int(pid), 0) == nil {
				return fmt.Errorf("worker %d on port %d of the deleted topology still runs", pid, port)
			}
		}
		for _, p := range ps {
			if err := holdsNothing(p, before); err != nil {
				return err
			}
		}
		if entries, err := os.ReadDir(sups[0].LocalDir + "/supervisor/code"); err != nil || len(entries) != 0 {
			return fmt.Errorf("%s still holds code (%v)", sups[0].Name, err)
		}
		return nil
	})
	for _, p := range ps {
		testcluster.WaitFor(t, 10*time.Second, p.Name+"'s cluster summary", func() error {
			cs := clusterSummary(t, c, p)
			if len(cs.GetTopologies()) != 0 || len(cs.GetSupervisors()) != 1 || len(cs.GetNimbuses()) != 2 {
				return fmt.Errorf("%d topologies, %d supervisors, %d nimbuses, want 0, 1, 2",
					len(cs.GetTopologies()), len(cs.GetSupervisors()), len(cs.GetNimbuses()))
			}
			return nil
		})
	}

	// New submissions work, replicate to both nimbuses and run.
	resp := submitSleeper(t, cl, "after", 1)
	if resp.GetReplicationCount() != 2 {
		t.Fatalf("submit after the deletion: %d replicas, want 2", resp.GetReplicationCount())
	}
	sleepers(t, conn, resp.GetTopologyId(), 1, 20*time.Second, sups...)
	allRunning(t, append(ps, sups...)...)
}

// Random bytes written into a node of each kind: nothing crashes, each is
// logged by name, owners put their nodes back, running topologies keep
// their workers, the leader keeps its term and schedules nothing on the
// garbage, and GetClusterInfo answers.
func TestHostileGarbageInZnodes(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--topology.min.replication.count", "2"))
	epoch, leader := c.WaitLeader(t, ps, 10*time.Second)
	follower := testcluster.Without(ps, leader)[0]
	sups := c.StartSupervisors(t, 2) // 4 slots
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	steady := submitSleeper(t, cl, "steady", 2).GetTopologyId()
	victim := submitSleeper(t, cl, "victim", 1).GetTopologyId()
	steadyWorkers := sleepers(t, conn, steady, 2, 20*time.Second, sups...)
	victimWorkers := sleepers(t, conn, victim, 1, 20*time.Second, sups...)

	// Nimbuses do not watch supervisors' nodes (their heartbeats), so
	// garbage there goes unread until the supervisor's next heartbeat puts
	// its node back (checked below).
	supPath := "/storm/supervisors/" + sups[0].ID()
	garbage(t, conn, supPath)

	stormPath := "/storm/storms/" + victim
	junkStorm := "/storm/storms/junk-1-1400000000"
	junkSup := "/storm/supervisors/sup-junk"
	assignmentPath := "/storm/assignments/" + steady
	nimbusPath := "/storm/nimbuses/" + follower.Addr()
	replicaPath := "/storm/code-distributor/" + steady + "/" + follower.Addr()
	for _, p := range []string{stormPath, junkStorm, junkSup, assignmentPath, nimbusPath, replicaPath} {
		garbage(t, conn, p)
	}

	// Logged by name, as kept (it was readable) or skipped (never was).
	for _, p := range ps {
		waitLogged(t, p, "unreadable node; keeping its last readable payload", map[string]string{"path": stormPath})
		waitLogged(t, p, "unreadable node skipped", map[string]string{"path": junkStorm})
		waitLogged(t, p, "unreadable node skipped", map[string]string{"path": junkSup})
	}
	waitLogged(t, leader, "unreadable node; keeping its last readable payload", map[string]string{"path": assignmentPath})
	// The owners put their nodes back.
	waitLogged(t, leader, "rewriting an unreadable assignment", map[string]string{"topology": steady})
	waitLogged(t, follower, "node overwritten by someone else; putting its data back", map[string]string{"path": nimbusPath})
	waitLogged(t, follower, "node overwritten by someone else; putting its data back", map[string]string{"path": replicaPath})
	testcluster.WaitFor(t, 10*time.Second, "the owned nodes readable again", func() error {
		for path, m := range map[string]proto.Message{
			supPath: new(clusterv1.SupervisorInfo), assignmentPath: new(clusterv1.Assignment),
			nimbusPath: new(clusterv1.NimbusInfo), replicaPath: new(clusterv1.ReplicaInfo),
		} {
			if err := readable(conn, path, m); err != nil {
				return err
			}
		}
		return nil
	})

	// A new topology is scheduled on the one free slot: the leader has run
	// its rounds with the garbage in view.
	after := submitSleeper(t, cl, "after", 1).GetTopologyId()
	sleepers(t, conn, after, 1, 20*time.Second, sups...)

	// Nothing moved or restarted, nothing was scheduled for the junk, and
	// the leader kept its term throughout.
	for id, want := range map[string]map[int32]int32{steady: steadyWorkers, victim: victimWorkers} {
		got := sleepers(t, conn, id, len(want), 10*time.Second, sups...)
		for port, pid := range want {
			if got[port] != pid {
				t.Errorf("%s: worker on port %d is %d, was %d", id, port, got[port], pid)
			}
		}
	}
	if ok, _, err := conn.Exists("/storm/assignments/junk-1-1400000000"); err != nil || ok {
		t.Errorf("an assignment for the junk StormBase: exists %v, %v", ok, err)
	}
	if e, p := c.WaitLeader(t, ps, 10*time.Second); e != epoch || p != leader {
		t.Errorf("leader %s epoch %d, was %s epoch %d: the garbage cost the leader its term", p.Name, e, leader.Name, epoch)
	}
	if err := logged(leader, "leadership ended", nil); err == nil {
		t.Errorf("%s's term ended", leader.Name)
	}

	// Every nimbus answers: the junk topology by id only, with no status;
	// the junk supervisor left out; both nimbuses, one an eligible standby.
	for _, p := range ps {
		testcluster.WaitFor(t, 10*time.Second, p.Name+"'s cluster summary", func() error {
			cs := clusterSummary(t, c, p)
			var ids []string
			for _, top := range cs.GetTopologies() {
				ids = append(ids, top.GetId()+":"+top.GetName()+":"+strconv.Itoa(int(top.GetStatus())))
			}
			want := []string{"junk-1-1400000000::0", after + ":after:1", steady + ":steady:1", victim + ":victim:1"}
			if strings.Join(ids, " ") != strings.Join(want, " ") {
				return fmt.Errorf("topologies %v, want %v", ids, want)
			}
			if len(cs.GetSupervisors()) != 2 || len(cs.GetNimbuses()) != 2 || cs.GetEligibleStandbys() != 1 {
				return fmt.Errorf("%d supervisors, %d nimbuses, %d eligible standbys; want 2, 2, 1",
					len(cs.GetSupervisors()), len(cs.GetNimbuses()), cs.GetEligibleStandbys())
			}
			return nil
		})
	}
	allRunning(t, append(ps, sups...)...)

	// A leader that never read the victim's StormBase (restarted after the
	// garbage) leaves its worker and slot alone: with every slot taken, a
	// new topology gets an empty assignment rather than the victim's slot.
	port, _ := strconv.Atoi(follower.Addr()[strings.LastIndex(follower.Addr(), ":")+1:])
	if err := follower.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	restarted, err := c.StartNimbus(testcluster.WithPort(port), testcluster.WithLocalDir(follower.LocalDir),
		testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--topology.min.replication.count", "1"))
	if err != nil {
		t.Fatal(err)
	}
	waitLogged(t, restarted, "unreadable node skipped", map[string]string{"path": stormPath})
	c.WaitQueued(t, 2, 15*time.Second)
	if err := leader.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader(t, []*testcluster.Process{restarted}, 15*time.Second)
	late := submitSleeper(t, newClient(t, c, restarted), "late", 1).GetTopologyId()
	testcluster.WaitFor(t, 10*time.Second, "the late topology's (empty) assignment", func() error {
		a := new(clusterv1.Assignment)
		if err := readable(conn, "/storm/assignments/"+late, a); err != nil {
			return err
		}
		if n := len(a.GetExecutors()); n != 0 {
			return fmt.Errorf("%d executors placed with every slot taken", n)
		}
		return nil
	})
	if got := sleepers(t, conn, victim, 1, 10*time.Second, sups...); fmt.Sprint(got) != fmt.Sprint(victimWorkers) {
		t.Errorf("victim's workers %v, were %v", got, victimWorkers)
	}
	allRunning(t, restarted)
	allRunning(t, sups...)
}

// createChildren creates n children of dir named by name(i), holding
// payload(i), in multis of batch.
func createChildren(t *testing.T, conn *zk.Conn, dir string, n, batch int, name func(int) string, payload func(int) []byte) {
	t.Helper()
	for start := 0; start < n; start += batch {
		var ops []any
		for i := start; i < min(n, start+batch); i++ {
			ops = append(ops, &zk.CreateRequest{Path: dir + "/" + name(i), Data: payload(i), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := conn.Multi(ops...); err != nil {
			t.Fatalf("create children %d-%d of %s: %v", start, start+len(ops)-1, dir, err)
		}
	}
}

// rssMB is a process's resident memory in MiB.
func rssMB(t *testing.T, p *testcluster.Process) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	t.Fatalf("no VmRSS for %s", p.Name)
	return 0
}

// goMetric reads one unlabelled metric from p's metrics endpoint.
func goMetric(t *testing.T, p *testcluster.Process, name string) float64 {
	t.Helper()
	body, err := p.Metrics()
	if err != nil {
		t.Fatalf("%s: metrics: %v", p.Name, err)
	}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", p.Name, line, err)
			}
			return v
		}
	}
	t.Fatalf("%s: no metric %s", p.Name, name)
	return 0
}

// Thousands of junk children under /storm/storms and /storm/supervisors,
// empty or garbage, the supervisors' with names long enough that listing
// them takes a response past jute.maxbuffer's 1 MB: the daemons stay up and
// keep their leader, load and skip them, log them in bounded volume, and
// answer GetClusterInfo quickly.
//
// Measured with ZooKeeper 3.8: the server sends a getChildren response of
// any size and go-zookeeper reads it (its buffer grows), so the daemons
// are not limited; the Java client (zkCli.sh, Curator tools) drops the
// connection ("ConnectionLoss") on one past jute.maxbuffer (1 MiB by
// default): between 5,000 and 6,000 children of 200-byte names. With
// topology ids of at most ~150 bytes that is ~6,800 topologies, or ~40,000
// supervisors of the usual 20-byte ids, before operators' tools cannot
// list the directory. Requests are limited, for every client: the server
// closes the connection on a request past 1 MiB (a multi of ~4,000 creates
// of 250-byte paths), and go-zookeeper refuses one past its 1.5 MiB buffer
// ("buffer too small"). No daemon sends multis near that size;
// testcluster.DeleteTree, one multi for a whole tree, would fail on this one.
func TestHostileThousandsOfChildren(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	epoch, leader := c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	steady := submitSleeper(t, cl, "steady", 1).GetTopologyId()
	workers := sleepers(t, conn, steady, 1, 20*time.Second, sups...)
	rssBefore := map[string]int{}
	for _, p := range ps {
		rssBefore[p.Name] = rssMB(t, p)
	}

	const n = 5000
	junk := func(i int) []byte {
		if i%2 == 0 {
			return nil // empty: parses as an empty message
		}
		return randomBytes(t, 64)
	}
	longName := strings.Repeat("x", 128) // the longest topology name allowed
	start := time.Now()
	createChildren(t, conn, "/storm/storms", n, 1000,
		func(i int) string { return fmt.Sprintf("%s-%d-1400000000", longName, i) }, junk)
	createChildren(t, conn, "/storm/supervisors", n, 1000,
		func(i int) string { return fmt.Sprintf("sup-%0220d", i) }, junk)
	created := time.Since(start)
	children, _, err := conn.Children("/storm/supervisors")
	if err != nil {
		t.Fatalf("list the supervisors: %v", err)
	}
	listing := 0
	for _, name := range children {
		listing += 4 + len(name)
	}
	if listing <= 1<<20 {
		t.Fatalf("the supervisors' listing is %d bytes; the test needs it past 1 MiB", listing)
	}

	// Every nimbus has loaded them all and answers quickly.
	for _, p := range ps {
		testcluster.WaitFor(t, 30*time.Second, p.Name+" lists the junk", func() error {
			begin := time.Now()
			cs := clusterSummary(t, c, p)
			if took := time.Since(begin); took > 2*time.Second {
				t.Errorf("%s: GetClusterInfo took %v", p.Name, took)
			}
			if len(cs.GetTopologies()) != n+1 || len(cs.GetSupervisors()) != 1 || cs.GetEligibleStandbys() != 1 {
				return fmt.Errorf("%d topologies, %d supervisors, %d eligible standbys; want %d, 1, 1",
					len(cs.GetTopologies()), len(cs.GetSupervisors()), cs.GetEligibleStandbys(), n+1)
			}
			return nil
		})
	}
	loaded := time.Since(start)

	// The cluster still works: a submission is scheduled, nothing is for
	// the junk, the worker that ran runs on, the leader kept its term.
	after := submitSleeper(t, cl, "after", 1).GetTopologyId()
	sleepers(t, conn, after, 1, 20*time.Second, sups...)
	if got := sleepers(t, conn, steady, 1, 10*time.Second, sups...); fmt.Sprint(got) != fmt.Sprint(workers) {
		t.Errorf("steady's workers %v, were %v", got, workers)
	}
	if assignments, _, err := conn.Children("/storm/assignments"); err != nil || len(assignments) != 2 {
		t.Errorf("assignments %d (%v), want 2: junk was scheduled", len(assignments), err)
	}
	if e, p := c.WaitLeader(t, ps, 10*time.Second); e != epoch || p != leader {
		t.Errorf("leader %s epoch %d, was %s epoch %d", p.Name, e, leader.Name, epoch)
	}

	// Logs name the first unreadable nodes and count the rest; memory
	// stays sane.
	for _, p := range ps {
		lines := countLogged(t, p, "unreadable node skipped")
		if lines == 0 || lines > 200 {
			t.Errorf("%s logged %d unreadable nodes one by one; want some, and at most 200", p.Name, lines)
		}
		if err := logged(p, "more unreadable nodes skipped", nil); err != nil {
			t.Error(err)
		}
		// The race detector's shadow memory inflates the resident size
		// several times over; the Go runtime's own account is the bound.
		sys, goroutines := goMetric(t, p, "go_memstats_sys_bytes")/(1<<20), goMetric(t, p, "go_goroutines")
		t.Logf("%s: Go runtime %.0f MiB (%.0f goroutines), resident %d MiB (was %d MiB)",
			p.Name, sys, goroutines, rssMB(t, p), rssBefore[p.Name])
		if sys > 256 {
			t.Errorf("%s: the Go runtime holds %.0f MiB for %d junk nodes", p.Name, sys, 2*n)
		}
	}
	t.Logf("created %d children in %v; supervisors' listing %d bytes; every nimbus answering with them after %v",
		2*n, created.Round(time.Millisecond), listing, loaded.Round(time.Millisecond))
	allRunning(t, append(ps, sups...)...)
}
