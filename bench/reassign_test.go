package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var reassignTrials = flag.Int("reassign-trials", 5, "supervisor failovers to time")

// BenchmarkSupervisorFailover times, from SIGKILL of the supervisor that
// runs a topology's 2 workers, until both run (answering on their ports)
// on the other supervisor. Detection waits for the dead supervisor's
// ZooKeeper session to expire (2 s here); the rest is the leader's
// scheduling round, the survivor's reaction and the worker start.
func BenchmarkSupervisorFailover(b *testing.B) {
	const session = 2 * time.Second
	z := testcluster.StartZooKeeper(b)
	c := testcluster.New(b, z.Addr(), testcluster.WithSessionTimeout(session), testcluster.WithLogf(discard))
	n, err := c.StartNimbus(testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	if err != nil {
		b.Fatal(err)
	}
	sups := map[string]*testcluster.Process{}
	for range 2 {
		p, err := c.StartSupervisor()
		if err != nil {
			b.Fatal(err)
		}
		sups[p.ID()] = p
	}
	conn := testcluster.ConnectZooKeeper(b, 10*time.Second, z.Addr())
	cl, err := client.New([]string{n.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	artifact, err := os.ReadFile(testcluster.Bin(b).Path("wordcount"))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := cl.SubmitTopology(context.Background(), &nimbusv1.TopologySpec{
		Name: "moving", NumWorkers: 2,
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentence", Parallelism: 2}, {Id: "count", Parallelism: 2}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}, strings.NewReader(string(artifact)), int64(len(artifact)), nil)
	if err != nil {
		b.Fatal(err)
	}
	id := resp.GetTopologyId()

	var samples []time.Duration
	for range *reassignTrials {
		// The victim: a supervisor running workers of the topology.
		var victim, other *testcluster.Process
		if err := testcluster.Poll(60*time.Second, func() error {
			victim, other = nil, nil
			total := 0
			for sid, p := range sups {
				k := running(conn, sid, id)
				total += k
				if k > 0 && victim == nil {
					victim = p
				} else {
					other = p
				}
			}
			if total != 2 || victim == nil || other == nil {
				return fmt.Errorf("%d workers running", total)
			}
			return nil
		}); err != nil {
			b.Fatalf("%v\n%s", err, c.Logs(20))
		}
		start := time.Now()
		if err := victim.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		if err := testcluster.Poll(60*time.Second, func() error {
			if k := running(conn, other.ID(), id); k != 2 {
				return fmt.Errorf("%d workers on the survivor", k)
			}
			return nil
		}); err != nil {
			b.Fatalf("%v\n%s", err, c.Logs(20))
		}
		samples = append(samples, time.Since(start))
		delete(sups, victim.ID())
		back, err := c.StartSupervisor(testcluster.WithLocalDir(victim.LocalDir))
		if err != nil {
			b.Fatal(err)
		}
		sups[back.ID()] = back
	}
	p50, p99 := percentile(samples, 50), percentile(samples, 99)
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	fmt.Fprintf(os.Stderr, "| supervisor SIGKILL to both workers running on the other (session %v, monitor 1 s) | %d | %v | %v | %v |\n",
		session, len(samples), p50.Round(time.Millisecond), p99.Round(time.Millisecond), minOf(samples).Round(time.Millisecond))
}

// running counts the workers of topology that supervisor sid reports
// running and that answer on their port.
func running(conn *zk.Conn, sid, topology string) int {
	data, _, err := conn.Get("/storm/supervisors/" + sid)
	if err != nil {
		return 0
	}
	info := new(clusterv1.SupervisorInfo)
	if cluster.Decode(sid, data, info) != nil {
		return 0
	}
	n := 0
	for _, w := range info.GetWorkers() {
		if w.GetTopologyId() == topology && w.GetState() == "running" && answers(w.GetPort(), topology) {
			n++
		}
	}
	return n
}

func answers(port int32, topology string) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.Contains(line, topology)
}
