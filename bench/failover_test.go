package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var (
	trials     = flag.Int("trials", 20, "failover trials per kind")
	stopTrials = flag.Int("stop-trials", 3, "SIGSTOP failover trials (each waits out the leader's session)")
	keepLogs   = flag.String("keep-logs", "", "keep the crash benchmarks' daemon logs and local dirs in this directory, one subdirectory per benchmark")
)

// crashSession is storm.zookeeper.session.timeout of the crash benchmarks:
// Storm's default, which a crash failover no longer waits for.
const crashSession = 20 * time.Second

// BenchmarkFailover measures the time from stopping the leader of three
// nimbuses until another nimbus answers GetLeader naming itself as leader,
// raw (nothing subtracted), under a 20 s session:
//   - graceful (SIGTERM, -trials): the leader deletes its lock node;
//   - crash (SIGKILL, -trials): a follower's stream to the leader breaks,
//     the leader's port refuses a connection, and the follower deposes it
//     (package depose);
//   - stop (SIGSTOP, -stop-trials): the port still accepts, nobody deposes
//     the leader, and failover waits for its session to expire.
//
// Each trial starts with the leader acting (leader health SERVING) and
// three nimbuses queued for leadership (the stopped one is replaced by a
// new process). It also counts the depositions the surviving nimbuses
// report (nimbus_depositions_total). ZooKeeper runs with tickTime=500ms,
// which caps sessions at 10 s: the session ZooKeeper granted is printed.
func BenchmarkFailover(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	conn := testcluster.ConnectZooKeeper(b, 10*time.Second, z.Addr())
	for _, kind := range []struct {
		name, sig string
		signal    syscall.Signal
		trials    int
	}{
		{"graceful", "SIGTERM", syscall.SIGTERM, *trials},
		{"crash", "SIGKILL", syscall.SIGKILL, *trials},
		{"stop", "SIGSTOP", syscall.SIGSTOP, *stopTrials},
	} {
		b.Run(kind.name, func(b *testing.B) {
			c := crashCluster(b, z.Addr(), kind.name)
			c.StartNimbuses(b, 3)
			granted := grantedSession(b, z.Addr())
			var samples []time.Duration
			var starts []time.Time
			var deposed float64
			for range kind.trials {
				if err := waitQueued(conn, c.Root, 3); err != nil {
					b.Fatalf("%v\n%s", err, c.Logs(30))
				}
				starts = append(starts, time.Now())
				d, n, err := failoverOnce(c, kind.signal)
				if err != nil {
					b.Fatalf("%v\n%s", err, c.Logs(30))
				}
				samples = append(samples, d)
				deposed += n
				if _, err := c.StartNimbus(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, kind.name+" ("+kind.sig+")", samples, starts, granted,
				fmt.Sprintf("%v depositions", deposed))
		})
	}
}

// failoverOnce stops the current leader with sig and times how long until
// another nimbus answers GetLeader naming itself. It returns that time and
// the depositions the other nimbuses counted meanwhile; a stopped (SIGSTOP)
// leader is killed once it has been replaced.
func failoverOnce(c *testcluster.Cluster, sig syscall.Signal) (time.Duration, float64, error) {
	live := c.Live()
	var old *testcluster.Process
	if err := testcluster.Poll(30*time.Second, func() error {
		_, p, err := c.AgreedLeader(live)
		if err != nil {
			return err
		}
		old = p
		return acting(c, p)
	}); err != nil {
		return 0, 0, err
	}
	rest := testcluster.Without(live, old)
	before, err := depositions(rest)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := old.Signal(sig); err != nil {
		return 0, 0, err
	}
	elapsed, err := untilLeader(c, start, rest, 60*time.Second)
	if err != nil {
		return 0, 0, err
	}
	if sig == syscall.SIGSTOP {
		_ = old.Signal(syscall.SIGKILL) // a stopped process dies of SIGKILL too
	}
	<-old.Exited()
	// A deposition is counted right after the lock node's deletion, which
	// the new leader hears of later; allow for it anyway.
	var deposed float64
	_ = testcluster.Poll(time.Second, func() error {
		after, err := depositions(rest)
		deposed = after - before
		if err == nil && (deposed > 0 || sig != syscall.SIGKILL) {
			return nil
		}
		return fmt.Errorf("no deposition counted (%v)", err)
	})
	return elapsed, deposed, nil
}

// untilLeader asks ps for the leader back to back until one of them
// answers naming itself, and returns the time since start.
func untilLeader(c *testcluster.Cluster, start time.Time, ps []*testcluster.Process, timeout time.Duration) (time.Duration, error) {
	deadline := start.Add(timeout)
	for time.Now().Before(deadline) {
		for _, p := range ps {
			if selfLeader(c, p) {
				return time.Since(start), nil
			}
		}
	}
	return 0, fmt.Errorf("no leader among %d nimbuses within %v", len(ps), timeout)
}

func selfLeader(c *testcluster.Cluster, p *testcluster.Process) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := c.API(p).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
	if err != nil {
		return false
	}
	l := resp.GetLeader()
	return l.GetHost()+":"+strconv.Itoa(int(l.GetPort())) == p.Addr()
}

// waitQueued polls until exactly n lock nodes are queued under root: the
// dead leader's node is gone and every live nimbus has joined. (Unlike
// testcluster's WaitQueued it ignores registrations, since a deposed
// leader's registration lasts until its session expires.)
func waitQueued(conn *zk.Conn, root string, n int) error {
	return testcluster.Poll(30*time.Second, func() error {
		locks, _, err := conn.Children(root + "/leader-lock")
		if err == nil && len(locks) != n {
			err = fmt.Errorf("%d nimbuses queued for leadership, want %d", len(locks), n)
		}
		return err
	})
}

// depositions sums nimbus_depositions_total over ps.
func depositions(ps []*testcluster.Process) (float64, error) {
	var sum float64
	for _, p := range ps {
		page, err := p.Metrics()
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(page) {
			if strings.HasPrefix(line, "nimbus_depositions_total{") {
				v, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndex(line, " "):]), 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %q: %w", p.Name, line, err)
				}
				sum += v
			}
		}
	}
	return sum, nil
}

// crashCluster is a Cluster for benchmark name: root /bench-<name>, a
// crashSession session, its logs in -keep-logs if set.
func crashCluster(b *testing.B, zkAddr, name string) *testcluster.Cluster {
	opts := []testcluster.ClusterOption{testcluster.WithRoot("/bench-" + name),
		testcluster.WithSessionTimeout(crashSession), testcluster.WithLogf(discard)}
	if *keepLogs != "" {
		opts = append(opts, testcluster.WithDir(filepath.Join(*keepLogs, name)))
	}
	return testcluster.New(b, zkAddr, opts...)
}

// report reports p50 and p99 as metrics and prints to stderr a markdown
// row (kind, trials, session, p50, p99, min, max, note), the samples and
// when the slowest trial started (to find it in the daemons' logs).
func report(b *testing.B, kind string, samples []time.Duration, starts []time.Time, session, note string) {
	p50, p99 := percentile(samples, 50), percentile(samples, 99)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	fmt.Fprintf(os.Stderr, "| %s | %d | %s | %v | %v | %v | %v | %s |\n", kind, len(samples), session,
		r(p50), r(p99), r(minOf(samples)), r(maxOf(samples)), note)
	ms := make([]string, len(samples))
	for i, d := range samples {
		ms[i] = strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
	}
	slowest := 0
	for i, d := range samples {
		if d > samples[slowest] {
			slowest = i
		}
	}
	fmt.Fprintf(os.Stderr, "  %s samples (ms, in trial order): %s; the slowest, trial %d, started at %s\n",
		kind, strings.Join(ms, " "), slowest+1, starts[slowest].UTC().Format("15:04:05.000"))
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

func minOf(ds []time.Duration) time.Duration { return percentile(ds, 0) }
func maxOf(ds []time.Duration) time.Duration { return percentile(ds, 100) }
