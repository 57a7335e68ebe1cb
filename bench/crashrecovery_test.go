package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// BenchmarkCrashRecovery measures, over -trials trials each under a 20 s
// session, a daemon SIGKILLed and restarted at once as itself (what a
// service manager does), the restart included:
//   - leader-restart: a lone nimbus (the leader) restarted on its port and
//     local dir, until it answers GetLeader naming itself (it removes the
//     lock node its earlier process left instead of queuing behind it);
//   - supervisor-restart: a supervisor running one worker, restarted with
//     its local dir and slots, until its heartbeat in ZooKeeper, written
//     by the new process's session, reports the worker running and
//     answering on its port, adopted: its pid unchanged (its keeper held it
//     while no supervisor ran).
//
// Each trial starts with the leader acting (leader health SERVING) or the
// worker running. Each row also gives the p50 of the part spent from SIGKILL until the
// restarted process printed its ready line.
func BenchmarkCrashRecovery(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	b.Run("leader-restart", func(b *testing.B) {
		c := crashCluster(b, z.Addr(), "leader-restart")
		n, err := c.StartNimbus()
		if err != nil {
			b.Fatal(err)
		}
		granted := grantedSession(b, z.Addr())
		var samples, ready []time.Duration
		var starts []time.Time
		for range *trials {
			if err := testcluster.Poll(30*time.Second, func() error { return acting(c, n) }); err != nil {
				b.Fatalf("%v\n%s", err, c.Logs(30))
			}
			port, err := strconv.Atoi(n.Addr()[strings.LastIndex(n.Addr(), ":")+1:])
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			starts = append(starts, start)
			if err := n.Signal(syscall.SIGKILL); err != nil {
				b.Fatal(err)
			}
			<-n.Exited() // the port is free
			back, err := c.StartNimbus(testcluster.WithPort(port), testcluster.WithLocalDir(n.LocalDir))
			if err != nil {
				b.Fatalf("%v\n%s", err, c.Logs(30))
			}
			ready = append(ready, time.Since(start))
			d, err := untilLeader(c, start, []*testcluster.Process{back}, 60*time.Second)
			if err != nil {
				b.Fatalf("%v\n%s", err, c.Logs(30))
			}
			samples = append(samples, d)
			n = back
		}
		report(b, "leader SIGKILL, restart at once", samples, starts, granted,
			fmt.Sprintf("kill to ready line p50 %v", percentile(ready, 50).Round(100*time.Microsecond)))
	})
	b.Run("supervisor-restart", func(b *testing.B) {
		c := crashCluster(b, z.Addr(), "supervisor-restart")
		n, err := c.StartNimbus(testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
		if err != nil {
			b.Fatal(err)
		}
		slots := testcluster.FreePorts(b, 2)
		sup, err := c.StartSupervisor(testcluster.WithSlots(slots...))
		if err != nil {
			b.Fatal(err)
		}
		granted := grantedSession(b, z.Addr())
		conn := testcluster.ConnectZooKeeper(b, 10*time.Second, z.Addr())
		id := submitWorkers(b, n, "restarted", 1)
		regPath := c.Root + "/supervisors/" + sup.ID()
		var samples, ready []time.Duration
		var starts []time.Time
		for range *trials {
			var before map[int32]int32
			if err := testcluster.Poll(60*time.Second, func() error {
				var err error
				before, err = workersOf(conn, regPath, id)
				if err == nil && len(before) != 1 {
					err = fmt.Errorf("%d workers running", len(before))
				}
				return err
			}); err != nil {
				b.Fatalf("%v\n%s", err, c.Logs(30))
			}
			_, stat, err := conn.Get(regPath)
			if err != nil {
				b.Fatal(err)
			}
			oldSession := stat.EphemeralOwner
			start := time.Now()
			starts = append(starts, start)
			if err := sup.Signal(syscall.SIGKILL); err != nil {
				b.Fatal(err)
			}
			<-sup.Exited()
			back, err := c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...))
			if err != nil {
				b.Fatalf("%v\n%s", err, c.Logs(30))
			}
			ready = append(ready, time.Since(start))
			if back.ID() != sup.ID() {
				b.Fatalf("restarted supervisor is %s, was %s", back.ID(), sup.ID())
			}
			if err := testcluster.Poll(60*time.Second, func() error {
				_, stat, err := conn.Get(regPath)
				if err != nil {
					return err
				}
				if stat.EphemeralOwner == oldSession {
					return fmt.Errorf("still the killed process's registration (session 0x%x)", oldSession)
				}
				after, err := workersOf(conn, regPath, id)
				if err != nil {
					return err
				}
				if len(after) != 1 {
					return fmt.Errorf("%d workers running", len(after))
				}
				for port, pid := range after {
					if before[port] != pid {
						return fmt.Errorf("the worker on %d is pid %d, was %d: restarted, not adopted", port, pid, before[port])
					}
				}
				return nil
			}); err != nil {
				b.Fatalf("%v\n%s", err, c.Logs(30))
			}
			samples = append(samples, time.Since(start))
			sup = back
		}
		report(b, "supervisor SIGKILL, restart at once, to its worker adopted", samples, starts, granted,
			fmt.Sprintf("kill to ready line p50 %v", percentile(ready, 50).Round(100*time.Microsecond)))
	})
}

// acting says whether n names itself leader and has started its term
// (leader health SERVING).
func acting(c *testcluster.Cluster, n *testcluster.Process) error {
	if !selfLeader(c, n) {
		return fmt.Errorf("%s does not name itself leader", n.Name)
	}
	if st, err := c.Health(n, nimbusv1.LeaderHealthService); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%s named leader but not acting yet (%v, %v)", n.Name, st, err)
	}
	return nil
}

// submitWorkers submits the example worker program to nimbus n as a
// topology of workers workers and returns its id.
func submitWorkers(b *testing.B, n *testcluster.Process, name string, workers int32) string {
	b.Helper()
	cl, err := client.New([]string{n.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	artifact, err := os.ReadFile(testcluster.Bin(b).Path("wordcount"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, &nimbusv1.TopologySpec{
		Name: name, NumWorkers: workers,
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentence", Parallelism: 1}, {Id: "count", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}, strings.NewReader(string(artifact)), int64(len(artifact)), nil)
	if err != nil {
		b.Fatal(err)
	}
	return resp.GetTopologyId()
}

// workersOf maps port to pid over the workers of topology that the
// supervisor heartbeat at path reports running and that answer on their
// port naming topology.
func workersOf(conn *zk.Conn, path, topology string) (map[int32]int32, error) {
	data, _, err := conn.Get(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	info := new(clusterv1.SupervisorInfo)
	if err := cluster.Decode(path, data, info); err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for _, w := range info.GetWorkers() {
		if w.GetTopologyId() != topology || w.GetState() != "running" {
			continue
		}
		if !answers(w.GetPort(), topology) {
			return nil, fmt.Errorf("the worker on %d (pid %d) does not answer", w.GetPort(), w.GetPid())
		}
		out[w.GetPort()] = w.GetPid()
	}
	return out, nil
}

// grantedSession opens a session asking for crashSession, as the daemons
// do, and says what ZooKeeper granted it (its cons command lists each
// session's timeout): servers cap sessions at 20 ticks.
func grantedSession(b *testing.B, zkAddr string) string {
	b.Helper()
	conn := testcluster.ConnectZooKeeper(b, crashSession, zkAddr)
	if _, _, err := conn.Exists("/"); err != nil {
		b.Fatal(err)
	}
	sid := fmt.Sprintf("sid=0x%x,", conn.SessionID())
	granted := "?"
	if err := testcluster.Poll(10*time.Second, func() error {
		nc, err := net.DialTimeout("tcp", zkAddr, time.Second)
		if err != nil {
			return err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := nc.Write([]byte("cons")); err != nil {
			return err
		}
		sc := bufio.NewScanner(nc)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, sid) {
				continue
			}
			_, rest, ok := strings.Cut(line, ",to=")
			if ms, _, _ := strings.Cut(rest, ","); ok {
				v, err := strconv.Atoi(ms)
				if err != nil {
					return fmt.Errorf("cons: %q", line)
				}
				granted = (time.Duration(v) * time.Millisecond).String()
				return nil
			}
		}
		return fmt.Errorf("cons lists no %s", sid)
	}); err != nil {
		b.Logf("cannot read the granted session timeout: %v", err)
	}
	return fmt.Sprintf("%v asked, %s granted", crashSession, granted)
}
