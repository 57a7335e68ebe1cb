package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var trials = flag.Int("trials", 20, "failover trials per kind")

// BenchmarkFailover measures, over -trials trials each, the time from
// stopping the leader (SIGTERM, or SIGKILL) until another nimbus answers
// GetLeader naming itself as leader. Crash times are reported minus the
// session timeout. ZooKeeper runs with tickTime=500ms.
func BenchmarkFailover(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	for _, kind := range []struct {
		name    string
		sig     syscall.Signal
		session time.Duration
	}{
		{"graceful", syscall.SIGTERM, 20 * time.Second},
		{"crash", syscall.SIGKILL, 2 * time.Second},
	} {
		b.Run(kind.name, func(b *testing.B) {
			c := testcluster.New(b, z.Addr(), testcluster.WithRoot("/bench-"+kind.name),
				testcluster.WithSessionTimeout(kind.session), testcluster.WithLogf(discard))
			c.StartNimbuses(b, 3)
			var samples []time.Duration
			for range *trials {
				d, err := failoverOnce(c, kind.sig)
				if err != nil {
					b.Fatalf("%v\n%s", err, c.Logs(30))
				}
				if kind.sig == syscall.SIGKILL {
					d -= kind.session
				}
				samples = append(samples, d)
				if _, err := c.StartNimbus(); err != nil {
					b.Fatal(err)
				}
			}
			p50, p99 := percentile(samples, 50), percentile(samples, 99)
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			fmt.Fprintf(os.Stderr, "| %s | %d | %v | %v | %v | %v | %v |\n", kind.name, len(samples),
				kind.session, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond),
				minOf(samples).Round(100*time.Microsecond), maxOf(samples).Round(100*time.Microsecond))
		})
	}
}

// failoverOnce stops the current leader with sig and times how long until
// another nimbus answers GetLeader naming itself.
func failoverOnce(c *testcluster.Cluster, sig syscall.Signal) (time.Duration, error) {
	live := c.Live()
	var old *testcluster.Process
	if err := testcluster.Poll(30*time.Second, func() error {
		_, p, err := c.AgreedLeader(live)
		old = p
		return err
	}); err != nil {
		return 0, err
	}
	rest := testcluster.Without(live, old)
	start := time.Now()
	if err := old.Signal(sig); err != nil {
		return 0, err
	}
	deadline := start.Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range rest {
			if selfLeader(c, p) {
				elapsed := time.Since(start)
				<-old.Exited()
				return elapsed, nil
			}
		}
	}
	return 0, fmt.Errorf("no new leader within 60s")
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
