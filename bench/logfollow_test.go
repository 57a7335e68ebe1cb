package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// followFor is how long BenchmarkLogFollow follows the worker's log.
const followFor = 15 * time.Second

// BenchmarkLogFollow follows one worker's log with `stormctl logs -f`
// (its default 1 s interval) while the worker writes numbered lines as
// fast as a shell loop can: the lines per second that reach stormctl, the
// worker's own rate, how far behind stormctl is at the end, and whether
// any line was lost or doubled (goal: none).
func BenchmarkLogFollow(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	c := crashCluster(b, z.Addr(), "logfollow")
	ps := c.StartNimbuses(b, 1)
	c.WaitLeader(b, ps, 30*time.Second)
	c.StartSupervisors(b, 1)
	cl := benchClient(b, ps, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.SubmitTopology(ctx, &nimbusv1.TopologySpec{
		Name: "chatty", NumWorkers: 1,
		Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"/bin/sh", "-c", `i=0; while :; do i=$((i+1)); echo "line $i"; done`},
	}, strings.NewReader("code"), 4, nil); err != nil {
		b.Fatal(err)
	}
	if err := testcluster.Poll(60*time.Second, func() error {
		info, err := cl.GetTopologyInfo(ctx, "chatty")
		if err != nil || info.GetTopology().GetNumWorkersRunning() != 1 || info.GetWorkers()[0].GetLogLink() == "" {
			return fmt.Errorf("not running with a log link yet (%v)", err)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}

	follow, stop := context.WithTimeout(context.Background(), followFor+5*time.Second)
	defer stop()
	cmd := exec.CommandContext(follow, testcluster.Bin(b).Path("stormctl"), "--seeds", ps[0].Addr(), "logs", "chatty", "-f", "--bytes", "1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	lineNo := regexp.MustCompile(`line (\d+)$`)
	sc := bufio.NewScanner(out)
	var first, last, lines, gaps, doubled int64
	var began time.Time
	for sc.Scan() {
		m := lineNo.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		switch {
		case first == 0:
			first, began = n, time.Now()
		case n <= last:
			doubled++
		case n > last+1:
			gaps += n - last - 1
		}
		last, lines = max(last, n), lines+1
		if time.Since(began) >= followFor {
			break
		}
	}
	took := time.Since(began)
	stop()
	written := lastLine(b, ps, last)
	rate := float64(lines) / took.Seconds()
	b.ReportMetric(rate, "lines/s")
	b.ReportMetric(float64(gaps), "lost")
	b.ReportMetric(float64(doubled), "doubled")
	fmt.Fprintf(os.Stderr, "| log follow, 1 worker, `stormctl logs -f` (1 s interval) | %s | %d lines, %.0f lines/s | worker wrote %.0f lines/s | behind at the end: %d lines | lost %d, doubled %d |\n",
		took.Round(time.Millisecond), lines, rate, float64(written-first)/took.Seconds(), written-last, gaps, doubled)
}

// lastLine is the number of the last line the worker's log holds now, as
// `stormctl logs` without -f prints it; at least least.
func lastLine(b *testing.B, ps []*testcluster.Process, least int64) int64 {
	out, err := exec.Command(testcluster.Bin(b).Path("stormctl"), "--seeds", ps[0].Addr(), "logs", "chatty", "--bytes", "4096").Output()
	if err != nil {
		return least
	}
	re := regexp.MustCompile(`line (\d+)`)
	ms := re.FindAllStringSubmatch(string(out), -1)
	if len(ms) == 0 {
		return least
	}
	n, _ := strconv.ParseInt(ms[len(ms)-1][1], 10, 64)
	return max(n, least)
}
