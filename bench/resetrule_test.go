package bench

import (
	"flag"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

var resetFor = flag.Duration("reset-for", time.Minute, "how long BenchmarkResetRule keeps its reset rules")

// BenchmarkResetRule counts leader changes while every nimbus's gRPC port
// answers with a TCP reset (iptables REJECT --reject-with tcp-reset on
// loopback, as an attacker on the path or a wrong firewall rule would):
// each follower's stream to the leader breaks and its probes are refused,
// yet the leader runs, so it must not be deposed more than once per
// session timeout (goal), and the challenge through ZooKeeper should keep
// it from being deposed at all. It watches the head of the leader queue
// in ZooKeeper every 20 ms for -reset-for, and sums the nimbuses'
// nimbus_deposition_challenges_total by outcome.
func BenchmarkResetRule(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	conn := testcluster.ConnectZooKeeper(b, 10*time.Second, z.Addr())
	c := crashCluster(b, z.Addr(), "reset-rule")
	ps := c.StartNimbuses(b, 3)
	c.WaitLeader(b, ps, 30*time.Second)
	c.WaitQueued(b, 3, 30*time.Second)
	before := challenges(b, ps)

	for _, p := range ps {
		port, err := strconv.Atoi(p.Addr()[strings.LastIndex(p.Addr(), ":")+1:])
		if err != nil {
			b.Fatal(err)
		}
		defer testcluster.RejectPort(b, port)()
	}
	dir := path.Join(c.Root, "leader-lock")
	head := func() string {
		children, _, err := conn.Children(dir)
		if q := cluster.LockOrder(children); err == nil && len(q) > 0 {
			return q[0].Name
		}
		return ""
	}
	first := head()
	changes, last := 0, first
	end := time.Now().Add(*resetFor)
	for tick := time.NewTicker(20 * time.Millisecond); time.Now().Before(end); <-tick.C {
		if h := head(); h != "" && h != last {
			changes++
			last = h
		}
	}
	after := challenges(b, ps)
	granted := grantedSession(b, z.Addr())
	perMinute := float64(changes) / resetFor.Minutes()
	fmt.Fprintf(os.Stderr, "| reset rule on every nimbus port for %v | %s | %d leader changes (%.1f per minute) | challenges: %s |\n",
		*resetFor, granted, changes, perMinute, diffCounts(before, after))
	b.ReportMetric(perMinute, "leader-changes/min")
	if limit := resetFor.Seconds() / crashSession.Seconds(); float64(changes) > limit+1 {
		b.Errorf("%d leader changes in %v: more than one per %v session", changes, *resetFor, crashSession)
	}
}

// challenges sums nimbus_deposition_challenges_total over ps, by outcome.
func challenges(b *testing.B, ps []*testcluster.Process) map[string]float64 {
	b.Helper()
	out := map[string]float64{}
	for _, p := range ps {
		page, err := p.Metrics()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.Lines(page) {
			if !strings.HasPrefix(line, "nimbus_deposition_challenges_total{") {
				continue
			}
			outcome := line[strings.Index(line, `outcome="`)+len(`outcome="`):]
			outcome = outcome[:strings.Index(outcome, `"`)]
			v, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndex(line, " "):]), 64)
			if err != nil {
				b.Fatal(err)
			}
			out[outcome] += v
		}
	}
	return out
}

func diffCounts(before, after map[string]float64) string {
	var parts []string
	for _, k := range []string{"answered", "unanswered", "recent"} {
		parts = append(parts, fmt.Sprintf("%s %v", k, after[k]-before[k]))
	}
	return strings.Join(parts, ", ")
}
