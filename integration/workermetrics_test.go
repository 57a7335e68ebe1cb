package integration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// metricsCluster is a cluster of one nimbus and one supervisor that
// heartbeats every second, and a ZooKeeper connection to read its node.
func metricsCluster(t *testing.T) (*testcluster.Cluster, []*testcluster.Process, *testcluster.Process, *zk.Conn) {
	t.Helper()
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1)
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1, testcluster.WithArgs("--supervisor.heartbeat.frequency.secs", "1"))
	return c, ps, sups[0], testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
}

// heartbeatRows is what the supervisor's heartbeat node carries of the
// worker of topology: its metrics' rows by component, and the metrics.
func heartbeatRows(t *testing.T, conn *zk.Conn, sup *testcluster.Process, topology string) (map[string]*clusterv1.StreamStats, *clusterv1.WorkerMetrics, error) {
	info, err := supervisorInfo(t, conn, sup.ID())
	if err != nil {
		return nil, nil, err
	}
	for _, w := range info.GetWorkers() {
		if w.GetTopologyId() != topology || w.GetState() != "running" {
			continue
		}
		m := w.GetMetrics()
		if m == nil {
			return nil, nil, errors.New("the running worker has no metrics yet")
		}
		// A component's rows (a bolt's input per source, its output) are
		// summed: the tests read each component's totals.
		rows := map[string]*clusterv1.StreamStats{}
		for _, r := range m.GetStreams() {
			have := rows[r.GetComponent()]
			if have == nil {
				rows[r.GetComponent()] = proto.Clone(r).(*clusterv1.StreamStats)
				continue
			}
			have.Emitted += r.GetEmitted()
			have.Transferred += r.GetTransferred()
			have.Acked += r.GetAcked()
			have.Failed += r.GetFailed()
			have.Executed += r.GetExecuted()
			have.CompleteLatencyUs += r.GetCompleteLatencyUs()
			have.ProcessLatencyUs += r.GetProcessLatencyUs()
			have.ExecuteLatencyUs += r.GetExecuteLatencyUs()
			have.Source = cmp.Or(have.GetSource(), r.GetSource())
		}
		return rows, m, nil
	}
	return nil, nil, fmt.Errorf("no running worker of %s in the heartbeat", topology)
}

// TestWordcountCountersRiseInTheHeartbeat runs the example on a real
// cluster: its counters reach the supervisor's heartbeat node in Storm's
// fields, consistent with each other and with what the worker says on its
// port, and they rise.
func TestWordcountCountersRiseInTheHeartbeat(t *testing.T) {
	c, ps, sup, conn := metricsCluster(t)
	cl := newClient(t, c, ps...)
	id := submitExample(t, cl, "counted", 1)
	workers := waitWorkers(t, conn, id, 1, 30*time.Second, sup)
	var port int32
	for port = range workers {
	}

	var first *clusterv1.WorkerMetrics
	var emitted uint64
	testcluster.WaitFor(t, 30*time.Second, "the spout's counts in the heartbeat", func() error {
		rows, m, err := heartbeatRows(t, conn, sup, id)
		if err != nil {
			return err
		}
		spout, split, count := rows["sentence"], rows["split"], rows["count"]
		if spout == nil || split == nil || count == nil {
			return fmt.Errorf("rows %v", rows)
		}
		if spout.GetEmitted() == 0 {
			return errors.New("nothing emitted yet")
		}
		// One worker runs every executor: each component's rows are whole.
		if spout.GetKind() != "spout" || split.GetKind() != "bolt" || spout.GetStream() != "default" {
			t.Fatalf("kinds and streams: %v", rows)
		}
		if spout.GetExecutors() != 1 || split.GetExecutors() != 2 || count.GetExecutors() != 3 {
			t.Fatalf("executors %d, %d, %d; want 1, 2, 3", spout.GetExecutors(), split.GetExecutors(), count.GetExecutors())
		}
		// The worker writes its counters while tuples are in flight, each
		// counter on its own, so one file may catch a tuple counted by one
		// component and not yet by the next: the heartbeat is read again
		// until one was written between two tuples.
		if spout.GetAcked() != spout.GetEmitted() || split.GetExecuted() != spout.GetEmitted() ||
			count.GetExecuted() != split.GetEmitted() || count.GetAcked() != count.GetExecuted() {
			return fmt.Errorf("tuples in flight: sentence %v, split %v, count %v", spout, split, count)
		}
		first, emitted = m, spout.GetEmitted()
		return nil
	})
	// The worker's own tally is at least what the heartbeat carried.
	if _, tuples, err := workerStatus(port); err != nil || uint64(tuples) < emitted {
		t.Fatalf("the worker says %d tuples (%v); the heartbeat %d", tuples, err, emitted)
	}
	testcluster.WaitFor(t, 30*time.Second, "the counts rising", func() error {
		rows, m, err := heartbeatRows(t, conn, sup, id)
		if err != nil {
			return err
		}
		if m.GetStartedUnixMs() != first.GetStartedUnixMs() {
			t.Fatalf("started_unix_ms changed from %d to %d: the worker restarted", first.GetStartedUnixMs(), m.GetStartedUnixMs())
		}
		if n := rows["sentence"].GetEmitted(); n <= emitted || m.GetTakenUnixMs() <= first.GetTakenUnixMs() {
			return fmt.Errorf("emitted %d (was %d)", n, emitted)
		}
		return nil
	})
}

// TestPythonWorkerReportsACounter runs examples/pyworker/worker.py, a
// worker in Python that speaks the documented protocol, and sees its
// counter in the heartbeat.
func TestPythonWorkerReportsACounter(t *testing.T) {
	script, err := os.ReadFile("../examples/pyworker/worker.py")
	if err != nil {
		t.Fatal(err)
	}
	c, ps, sup, conn := metricsCluster(t)
	cl := newClient(t, c, ps...)
	spec := &nimbusv1.TopologySpec{
		Name: "py", NumWorkers: 1,
		Components:    []*nimbusv1.ComponentSpec{{Id: "ticks", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, strings.NewReader(string(script)), int64(len(script)), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTopologyId()

	var seen uint64
	testcluster.WaitFor(t, 60*time.Second, "the Python worker's counter rising in the heartbeat", func() error {
		rows, _, err := heartbeatRows(t, conn, sup, id)
		if err != nil {
			return err
		}
		ticks := rows["ticks"]
		if ticks == nil || ticks.GetKind() != "spout" || ticks.GetStream() != "default" {
			return fmt.Errorf("rows %v", rows)
		}
		switch n := ticks.GetEmitted(); {
		case seen == 0 && n > 0:
			seen = n
			return errors.New("seen once; waiting for it to rise")
		case seen > 0 && n > seen:
			return nil
		default:
			return fmt.Errorf("emitted %d", n)
		}
	})
}
