package integration

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// Restarting one worker: its supervisor stops it and starts it again on
// the same slot (a new pid), counting the restart with who asked as its
// last error; the topology's other worker runs on untouched. A supervisor
// restarted afterwards adopts the new worker and does not repeat the
// restart. A worker the topology does not have is NOT_FOUND.
func TestRestartOneWorker(t *testing.T) {
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
	id := submitExample(t, cl, "restartme", 2)
	before := waitWorkers(t, conn, id, 2, 30*time.Second, sup)

	info, err := cl.GetTopologyInfo(t.Context(), "restartme")
	if err != nil {
		t.Fatal(err)
	}
	target := info.GetWorkers()[0]
	worker := fmt.Sprintf("%s:%d", target.GetHost(), target.GetPort())
	other := int32(slots[0])
	if other == target.GetPort() {
		other = int32(slots[1])
	}
	resp, err := cl.RestartWorker(t.Context(), "restartme", worker)
	if err != nil {
		t.Fatalf("restart %s: %v", worker, err)
	}
	if resp.GetSupervisorId() != sup.ID() || resp.GetPort() != target.GetPort() || resp.GetGeneration() != 1 {
		t.Fatalf("restart answered %v", resp)
	}
	var after map[int32]int32
	testcluster.WaitFor(t, 30*time.Second, "the worker running again with a new pid", func() error {
		after, err = runningWorkers(t, conn, id, sup)
		if err != nil || len(after) != 2 || after[target.GetPort()] == before[target.GetPort()] {
			return fmt.Errorf("workers %v, before %v (%v)", after, before, err)
		}
		return nil
	})
	if after[other] != before[other] {
		t.Fatalf("the other worker's pid is %d, was %d: it was restarted too", after[other], before[other])
	}
	if processRuns(int(before[target.GetPort()])) {
		t.Fatalf("the restarted worker's old process %d still runs", before[target.GetPort()])
	}
	reg, _, err := registration(t, conn, sup.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range reg.GetWorkers() {
		restarted := w.GetPort() == target.GetPort()
		if want := map[bool]int32{true: 1}[restarted]; w.GetRestarts() != want {
			t.Errorf("worker on port %d: %d restarts, want %d", w.GetPort(), w.GetRestarts(), want)
		}
		if restarted && !strings.Contains(w.GetLastError(), "restarted on request of") {
			t.Errorf("the restarted worker's last error is %q, want who asked", w.GetLastError())
		}
	}

	// A supervisor restarted now adopts the new worker: the request was
	// answered, and is not answered again.
	if err := sup.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	back, err := c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the restarted supervisor adopting both workers", func() error {
		got, err := runningWorkers(t, conn, id, back)
		if err != nil || !equalPids(got, after) {
			return fmt.Errorf("workers %v, want %v (%v)", got, after, err)
		}
		return nil
	})
	if got := workerRestarts(t, conn, back.ID()); got[target.GetPort()] != 1 || got[other] != 0 {
		t.Errorf("restart counts after the supervisor's restart: %v", got)
	}

	for _, bad := range []struct{ name, worker string }{
		{"restartme", fmt.Sprintf("%s:1", target.GetHost())},
		{"restartme", "elsewhere.invalid:" + fmt.Sprint(target.GetPort())},
		{"nosuchtopology", worker},
	} {
		_, err := cl.RestartWorker(t.Context(), bad.name, bad.worker)
		if status.Code(err) != codes.NotFound {
			t.Errorf("restart %s of %s: %v, want NotFound", bad.worker, bad.name, err)
		}
	}
	if _, err := cl.RestartWorker(t.Context(), "restartme", "no-port"); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "worker") {
		t.Errorf("restart of a worker without a port: %v, want InvalidArgument naming worker", err)
	}
}
