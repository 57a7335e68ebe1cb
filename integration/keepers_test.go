package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Workers outlive their supervisor: stopped for an upgrade (SIGTERM) or
// killed (SIGKILL) and started again on its directory, the supervisor
// adopts its workers: the same pids, their restart counts kept, and every
// read of the topology meanwhile shows every worker running.
func TestRestartedSupervisorAdoptsItsWorkers(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(strings.ToUpper(sig.String()), func(t *testing.T) { restartAndAdopt(t, sig) })
	}
}

func restartAndAdopt(t *testing.T, sig syscall.Signal) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(10*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	slots := testcluster.FreePorts(t, 2)
	sup, err := c.StartSupervisor(testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	id := submitExample(t, cl, "kept", 2)
	before := waitWorkers(t, conn, id, 2, 30*time.Second, sup)
	restarts := workerRestarts(t, conn, sup.ID())

	_, oldSession, err := registration(t, conn, sup.ID())
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the nimbus to show both workers running", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), "kept")
		if err != nil || info.GetTopology().GetNumWorkersRunning() != 2 {
			return fmt.Errorf("%v (%v)", info.GetTopology(), err)
		}
		return nil
	})
	reads := watchWorkers(t, cl, "kept")
	if err := sup.Stop(sig, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	back, err := c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != sup.ID() {
		t.Fatalf("restarted supervisor is %s, was %s", back.ID(), sup.ID())
	}
	testcluster.WaitFor(t, 20*time.Second, "the new process reporting the same workers", func() error {
		_, session, err := registration(t, conn, back.ID())
		if err != nil || session == oldSession {
			return fmt.Errorf("still the old registration (%v)", err)
		}
		after, err := runningWorkers(t, conn, id, back)
		if err != nil || !equalPids(after, before) {
			return fmt.Errorf("workers %v, before %v (%v)", after, before, err)
		}
		return nil
	})
	t.Logf("%s: adopted %d workers %v after the stop", sig, len(before), time.Since(stopped).Round(time.Millisecond))
	if got := workerRestarts(t, conn, back.ID()); !equalPids(got, restarts) {
		t.Fatalf("restart counts %v, before %v", got, restarts)
	}
	for _, pid := range before {
		if syscall.Kill(int(pid), 0) != nil {
			t.Fatalf("worker %d is not running", pid)
		}
	}
	if n, bad := reads(); n == 0 || bad != "" {
		t.Fatalf("%d reads of the topology during the restart; one not all running: %s", n, bad)
	}
}

// A supervisor that never comes back: its keepers end its workers before
// the nimbus gives their slots to another supervisor, so no executor ever
// runs in two places.
func TestWorkersOfASupervisorThatNeverComesBackEndFirst(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	gone := c.StartSupervisors(t, 1)[0]
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	id := submitExample(t, newClient(t, c, ps...), "moved", 2)
	pids := waitWorkers(t, conn, id, 2, 30*time.Second, gone)
	spare := c.StartSupervisors(t, 1)[0]

	if err := gone.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	testcluster.WaitFor(t, 30*time.Second, "the assignment to move off the killed supervisor", func() error {
		a, err := assignmentOf(conn, id)
		if err != nil {
			return err
		}
		for _, e := range a.GetExecutors() {
			if e.GetSlot().GetSupervisorId() == gone.ID() {
				return errors.New("still on the killed supervisor")
			}
		}
		// Moved: every worker of the killed supervisor must be gone by now.
		for port, pid := range pids {
			if processRuns(int(pid)) {
				t.Fatalf("worker %d (port %d) of the killed supervisor still runs %v after the kill, when its slot was given away",
					pid, port, time.Since(killed).Round(time.Millisecond))
			}
		}
		return nil
	})
	t.Logf("assignment moved %v after the kill, its workers gone before", time.Since(killed).Round(time.Millisecond))
	waitWorkers(t, conn, id, 2, 30*time.Second, spare)
}

// watchWorkers reads the named topology's workers every 20 ms until the
// returned function is called, which says how many reads it made and the
// first that did not show every worker running.
func watchWorkers(t *testing.T, cl *client.Client, name string) func() (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var (
		wg  sync.WaitGroup
		n   int
		bad string
	)
	wg.Go(func() {
		for ctx.Err() == nil {
			info, err := cl.GetTopologyInfo(ctx, name)
			if ctx.Err() != nil {
				return
			}
			n++
			if err == nil {
				for _, w := range info.GetWorkers() {
					if w.GetState() != "running" && bad == "" {
						bad = fmt.Sprintf("worker on port %d %s, at %v: %v", w.GetPort(), w.GetState(), time.Now().Format("15:04:05.000"), info.GetWorkers())
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() (int, string) {
		cancel()
		wg.Wait()
		return n, bad
	}
}

// workerRestarts is each worker's restart count a supervisor reports, by
// port.
func workerRestarts(t *testing.T, conn *zk.Conn, id string) map[int32]int32 {
	t.Helper()
	info, err := supervisorInfo(t, conn, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int32{}
	for _, w := range info.GetWorkers() {
		out[w.GetPort()] = w.GetRestarts()
	}
	return out
}

// registration is a supervisor's registration and the session that owns
// it.
func registration(t *testing.T, conn *zk.Conn, id string) (*clusterv1.SupervisorInfo, int64, error) {
	t.Helper()
	data, stat, err := conn.Get("/storm/supervisors/" + id)
	if err != nil {
		return nil, 0, err
	}
	info := new(clusterv1.SupervisorInfo)
	return info, stat.EphemeralOwner, cluster.Decode(id, data, info)
}

func assignmentOf(conn *zk.Conn, id string) (*clusterv1.Assignment, error) {
	data, _, err := conn.Get("/storm/assignments/" + id)
	if err != nil {
		return nil, err
	}
	a := new(clusterv1.Assignment)
	return a, cluster.Decode(id, data, a)
}

func equalPids(a, b map[int32]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// processRuns reports whether pid is a live process (not a zombie).
func processRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
