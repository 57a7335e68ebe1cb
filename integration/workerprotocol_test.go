package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// submitExampleWith submits the example worker with extra arguments after
// its --port.
func submitExampleWith(t *testing.T, cl *client.Client, name string, workers int32, extra ...string) string {
	t.Helper()
	data, err := os.ReadFile(testcluster.Bin(t).Path("wordcount"))
	if err != nil {
		t.Fatal(err)
	}
	spec := &nimbusv1.TopologySpec{
		Name: name, NumWorkers: workers,
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentence", Parallelism: 1}, {Id: "split", Parallelism: 2}, {Id: "count", Parallelism: 3}},
		WorkerCommand: append([]string{"{code_dir}/artifact", "--port", "{port}"}, extra...),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, strings.NewReader(string(data)), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetTopologyId()
}

var replyAttrs = regexp.MustCompile(`\bstatus=(\w+) tuples=([0-9]+)\b`)

// workerStatus asks the example worker on port which status it has taken
// up (its acknowledgement) and how many tuples its spout has emitted.
func workerStatus(port int32) (status string, tuples int64, err error) {
	reply, err := askWorker(port)
	if err != nil {
		return "", 0, err
	}
	m := replyAttrs.FindStringSubmatch(reply)
	if m == nil {
		return "", 0, fmt.Errorf("reply %q has no status and tuples", reply)
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	return m[1], n, nil
}

// waitWorkerStatus waits until the worker on port acknowledges status and
// returns its tuple count then.
func waitWorkerStatus(t *testing.T, port int32, status string) int64 {
	t.Helper()
	var n int64
	testcluster.WaitFor(t, 20*time.Second, "the worker on "+strconv.Itoa(int(port))+" "+status, func() error {
		st, tuples, err := workerStatus(port)
		if err == nil && st != status {
			err = fmt.Errorf("status %s", st)
		}
		n = tuples
		return err
	})
	return n
}

var errObserving = errors.New("still observing")

// assertNotEmitting watches the worker on port for window (several of the
// example's 1 s ticks) and fails if its tuple count moves from n.
func assertNotEmitting(t *testing.T, port int32, n int64, window time.Duration) {
	t.Helper()
	start := time.Now()
	var moved error
	testcluster.WaitFor(t, window+10*time.Second, "an observation window", func() error {
		_, tuples, err := workerStatus(port)
		if err != nil {
			return err
		}
		if tuples != n {
			moved = fmt.Errorf("the spout emitted: %d tuples, then %d", n, tuples)
			return nil
		}
		if time.Since(start) < window {
			return errObserving // the condition is the elapsed time, not a sync
		}
		return nil
	})
	if moved != nil {
		t.Fatal(moved)
	}
}

// TestWorkerProtocolReachesWorkers: deactivate pauses the example's spout,
// activate resumes it, kill stops it before the workers are removed, and an
// error the worker reports is its last error in GetTopologyInfo.
func TestWorkerProtocolReachesWorkers(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	const reported = "bad input: sentence 7 is not UTF-8"
	id := submitExampleWith(t, cl, "proto", 1, "--report-error", reported)
	workers := waitWorkers(t, conn, id, 1, 20*time.Second, sups...)
	var port, pid int32
	for port, pid = range workers {
	}

	// Reported through STORM_ERROR_FILE: the next heartbeat says that it
	// reported one, and when; its text goes to the worker's log, never into
	// ZooKeeper, whose nodes anyone may read.
	testcluster.WaitFor(t, 30*time.Second, "the reported error as the worker's last error", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), "proto")
		if err != nil {
			return err
		}
		for _, w := range info.GetWorkers() {
			if strings.Contains(w.GetLastError(), "the worker reported an error") && w.GetLastErrorUnixMs() > 0 {
				if strings.Contains(w.GetLastError(), reported) {
					return fmt.Errorf("the error's text reached ZooKeeper: %q", w.GetLastError())
				}
				return nil
			}
		}
		return fmt.Errorf("workers %v", info.GetWorkers())
	})
	testcluster.WaitFor(t, 10*time.Second, "the reported error's text in the worker's log", func() error {
		b, err := os.ReadFile(filepath.Join(sups[0].LocalDir, "workers-artifacts", id, fmt.Sprint(port), "worker.log"))
		if err != nil || !strings.Contains(string(b), reported) {
			return fmt.Errorf("not in the log (%v)", err)
		}
		return nil
	})

	ctx := t.Context()
	running := waitWorkerStatus(t, port, "active")
	testcluster.WaitFor(t, 10*time.Second, "the spout emitting", func() error {
		if _, n, err := workerStatus(port); err != nil || n <= running {
			return fmt.Errorf("%d tuples, %v", n, err)
		}
		return nil
	})

	if err := cl.DeactivateTopology(ctx, "proto"); err != nil {
		t.Fatal(err)
	}
	paused := waitWorkerStatus(t, port, "inactive")
	assertNotEmitting(t, port, paused, 3*time.Second)

	if err := cl.ActivateTopology(ctx, "proto"); err != nil {
		t.Fatal(err)
	}
	waitWorkerStatus(t, port, "active")
	testcluster.WaitFor(t, 10*time.Second, "the spout emitting again", func() error {
		if _, n, err := workerStatus(port); err != nil || n <= paused {
			return fmt.Errorf("%d tuples (paused at %d), %v", n, paused, err)
		}
		return nil
	})

	// Kill: the workers hear at once and stop emitting; they run, drained,
	// until the wait ends and the assignment goes.
	wait := int32(60)
	if err := cl.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "proto", WaitSecs: &wait}); err != nil {
		t.Fatal(err)
	}
	killed := waitWorkerStatus(t, port, "killed")
	assertNotEmitting(t, port, killed, 3*time.Second)
	if now, err := runningWorkers(t, conn, id, sups...); err != nil || now[port] != pid {
		t.Fatalf("during the kill wait the worker was restarted or stopped: %v (was pid %d), %v", now, pid, err)
	}
}
