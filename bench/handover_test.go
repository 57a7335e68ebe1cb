package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// BenchmarkHandOver hands leadership over -trials times among three
// nimbuses (stormctl admin handover without --to: the next in the queue),
// while a client calls the leader back to back (ActivateTopology on a
// topology, then GetClusterInfo). It reports the time without a leader
// each hand-over measured (leaderless_ms: from the step-down to the new
// leader's leader health SERVING), the HandOver call's own time, and the
// client's calls: made, failed (goal 0), retried and redirected (from the
// SDK's debug log).
func BenchmarkHandOver(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	c := crashCluster(b, z.Addr(), "handover")
	ps := c.StartNimbuses(b, 3)
	c.WaitLeader(b, ps, 30*time.Second)
	admin := benchClient(b, ps, nil)
	if err := submitSpec(admin, "handover"); err != nil {
		b.Fatal(err)
	}

	var sdk sdkCounts
	loop := benchClient(b, ps, &sdk)
	ctx, stop := context.WithCancel(context.Background())
	var calls, failed atomic.Int64
	var failures []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := loop.ActivateTopology(callCtx, "handover")
			if err == nil {
				_, err = loop.GetClusterInfo(callCtx)
			}
			cancel()
			calls.Add(1)
			if err != nil && ctx.Err() == nil {
				failed.Add(1)
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
			}
		}
	})

	var leaderless, call []time.Duration
	var starts []time.Time
	for range *trials {
		c.WaitQueued(b, 3, 30*time.Second)
		// Calls before each hand-over, so that some are in flight during it.
		from := calls.Load()
		if err := testcluster.Poll(30*time.Second, func() error {
			if n := calls.Load() - from; n < callsBetween {
				return fmt.Errorf("%d calls since the last hand-over", n)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		starts = append(starts, start)
		resp, err := admin.HandOver(context.Background(), "")
		if err != nil {
			b.Fatalf("hand-over %d: %v\n%s", len(starts), err, c.Logs(30))
		}
		call = append(call, time.Since(start))
		leaderless = append(leaderless, time.Duration(resp.GetLeaderlessMs())*time.Millisecond)
	}
	stop()
	wg.Wait()

	granted := grantedSession(b, z.Addr())
	report(b, "hand-over: time without a leader (leaderless_ms)", leaderless, starts, granted, "")
	report(b, "hand-over: the HandOver call", call, starts, granted, "")
	fmt.Fprintf(os.Stderr, "  client during %d hand-overs: %d calls, %d failed, %d retried attempts, %d redirects followed\n",
		len(starts), calls.Load(), failed.Load(), sdk.retries.Load(), sdk.redirects.Load())
	b.ReportMetric(float64(failed.Load()), "failed-calls")
	if len(failures) > 0 {
		b.Errorf("%d client calls failed during the hand-overs; first: %s", len(failures), failures[0])
	}
}

// callsBetween is how many client calls are made between hand-overs.
const callsBetween = 20

// sdkCounts counts what the SDK logs at debug: retried attempts and
// redirects followed.
type sdkCounts struct {
	retries, redirects atomic.Int64
}

func (s *sdkCounts) Enabled(context.Context, slog.Level) bool { return true }
func (s *sdkCounts) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "leader call failed; retrying"):
		s.retries.Add(1)
	case strings.HasPrefix(r.Message, "following leader redirect"):
		s.redirects.Add(1)
	}
	return nil
}
func (s *sdkCounts) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *sdkCounts) WithGroup(string) slog.Handler      { return s }

// benchClient is an SDK client seeded with every nimbus of ps, logging to
// counts if not nil.
func benchClient(b *testing.B, ps []*testcluster.Process, counts *sdkCounts) *client.Client {
	b.Helper()
	seeds := make([]string, len(ps))
	for i, p := range ps {
		seeds[i] = p.Addr()
	}
	opts := []client.Option{}
	if counts != nil {
		opts = append(opts, client.WithLogger(slog.New(counts)))
	}
	cl, err := client.New(seeds, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return cl
}

// submitSpec submits a topology of one sleeping worker named name; no
// supervisor runs it.
func submitSpec(cl *client.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := cl.SubmitTopology(ctx, &nimbusv1.TopologySpec{
		Name: name, NumWorkers: 1,
		Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"/bin/sleep", "3600"},
	}, strings.NewReader("code"), 4, nil)
	return err
}
