package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// Log levels at run time: a level set with a timeout changes what the
// running worker writes at once; the leader that set it hands over and
// the level still ends on time (the supervisor applies the timeout), and
// the worker's output changes back. A level set without a timeout reaches
// a worker started afterwards.
func TestLogLevelsReachWorkersAndRevert(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr())
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	sup := c.StartSupervisors(t, 1)[0]
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	id := submitExample(t, cl, "loud", 1)
	pids := waitWorkers(t, conn, id, 1, 30*time.Second, sup)
	var port int32
	for p := range pids {
		port = p
	}
	logPath := filepath.Join(sup.LocalDir, "workers-artifacts", id, fmt.Sprint(port), "worker.log")
	levelsPath := filepath.Join(sup.LocalDir, "supervisor", "workers", fmt.Sprintf("%s-%d", id, port), workerproto.LogLevelFileName)
	const debugLine = `msg="top word"` // the example logs in slog's text form

	const timeout = 6
	resp, err := cl.SetLogConfig(t.Context(), &nimbusv1.SetLogConfigRequest{Name: "loud",
		Set: map[string]*clusterv1.LoggerLevel{"wordcount": {TargetLevel: "debug", TimeoutSecs: timeout}}})
	if err != nil {
		t.Fatal(err)
	}
	set := resp.GetLogLevels()["wordcount"]
	if set.GetTargetLevel() != "DEBUG" || set.GetTimeoutUnixMs() == 0 {
		t.Fatalf("set answered %v", resp.GetLogLevels())
	}
	ends := time.UnixMilli(set.GetTimeoutUnixMs())
	testcluster.WaitFor(t, 10*time.Second, "the worker writing DEBUG lines", func() error {
		if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), debugLine) {
			return fmt.Errorf("no %s in %s (levels file: %s)", debugLine, logPath, readOr(levelsPath))
		}
		return nil
	})

	// The nimbus that set it hands over; the timeout ends all the same.
	if err := leader.Stop(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, timeout*time.Second+10*time.Second, "the level reverting after its timeout", func() error {
		if time.Now().Before(ends) {
			return fmt.Errorf("the timeout ends at %s", ends.Format(time.TimeOnly))
		}
		if got := readOr(levelsPath); strings.Contains(got, "wordcount") {
			return fmt.Errorf("levels file %s", got)
		}
		return nil
	})
	reverted, _ := os.ReadFile(logPath)
	testcluster.WaitFor(t, 10*time.Second, "three more lines of output", func() error {
		b, _ := os.ReadFile(logPath)
		if n := strings.Count(string(b[len(reverted):]), "msg=processed"); n < 3 {
			return fmt.Errorf("%d lines since the revert", n)
		}
		return nil
	})
	b, _ := os.ReadFile(logPath)
	// A line may have been on its way as the file changed: skip the first.
	if _, after, _ := strings.Cut(string(b[len(reverted):]), "msg=processed"); strings.Contains(after, debugLine) {
		t.Errorf("the worker still writes DEBUG lines after the timeout:\n%s", after)
	}
	follower := ps[0]
	if follower == leader {
		follower = ps[1]
	}
	cl = newClient(t, c, follower)
	info, err := cl.GetTopologyInfo(t.Context(), "loud")
	if err != nil || len(info.GetLogLevels()) != 0 {
		t.Fatalf("after the timeout the topology's log levels are %v (%v)", info.GetLogLevels(), err)
	}

	// Without a timeout, and a worker started afterwards: it starts with it.
	if _, err := cl.SetLogConfig(t.Context(), &nimbusv1.SetLogConfigRequest{Name: "loud",
		Set: map[string]*clusterv1.LoggerLevel{"ROOT": {TargetLevel: "DEBUG"}}}); err != nil {
		t.Fatal(err)
	}
	info, err = cl.GetTopologyInfo(t.Context(), "loud")
	if err != nil {
		t.Fatal(err)
	}
	w := info.GetWorkers()[0]
	if _, err := cl.RestartWorker(t.Context(), "loud", fmt.Sprintf("%s:%d", w.GetHost(), w.GetPort())); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the restarted worker writing DEBUG lines", func() error {
		got, err := runningWorkers(t, conn, id, sup)
		if err != nil || got[port] == 0 || got[port] == pids[port] {
			return fmt.Errorf("workers %v (%v)", got, err)
		}
		b, _ := os.ReadFile(logPath)
		_, since, _ := strings.Cut(string(b), fmt.Sprintf("pid=%d", got[port]))
		if !strings.Contains(since, debugLine) {
			return fmt.Errorf("no DEBUG line from pid %d yet", got[port])
		}
		return nil
	})
}

// readOr is the file's content, or why it could not be read.
func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
