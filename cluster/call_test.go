package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// A call ZooKeeper does not answer gives up at the request's deadline less
// its margin, is counted as abandoned until it returns, and once
// cluster.MaxAbandoned calls are out new calls fail fast without running.
// fn blocks on a channel here, standing for a server that does not answer.
func TestCallGivesUpAtTheBudgetAndCapsAbandonedCalls(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	blocked := func(*zk.Conn) (int, error) { <-release; return 1, nil }

	// An answer within the budget is returned as it is.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	ok, err := cluster.Call(ctx, s, "exists /", func(conn *zk.Conn) (bool, error) {
		ok, _, err := conn.Exists("/")
		return ok, err
	})
	if err != nil || !ok {
		t.Fatalf("Call(exists /) = %v, %v; want true", ok, err)
	}

	// A read not answered: ErrUnavailable on the call's own budget, the
	// deadline less its margin of min(100 ms, 10 %): 900 ms of a second.
	// The context is never done, so nothing else can end the call (were
	// the budget lost, a watchdog would release fn after 10 s and the call
	// would succeed); the error names the budget, and a timer never fires
	// early, so no wall-clock upper bound is needed.
	start := time.Now()
	watchdog := time.AfterFunc(10*time.Second, func() { releaseOnce.Do(func() { close(release) }) })
	_, err = cluster.Call(deadlineOnly(start.Add(time.Second)), s, "blocked read", blocked)
	took := time.Since(start)
	if !watchdog.Stop() {
		t.Fatalf("blocked read: %v after %v, on the watchdog; want ErrUnavailable on its budget", err, took)
	}
	if !errors.Is(err, cluster.ErrUnavailable) || !strings.Contains(err.Error(), "blocked read") {
		t.Fatalf("blocked read: %v; want ErrUnavailable naming the call", err)
	}
	if budget := budgetIn(t, err); budget > 900*time.Millisecond || took < 900*time.Millisecond {
		t.Fatalf("blocked read gave up on a budget of %v after %v; want the deadline less 100 ms, 900 ms", budget, took)
	}
	if n := s.Abandoned(); n != 1 {
		t.Fatalf("Abandoned() = %d after one abandoned call, want 1", n)
	}

	// A write not answered may still apply: ErrOutcomeUnknown.
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := cluster.CallWrite(ctx, s, "blocked write", blocked); !errors.Is(err, cluster.ErrOutcomeUnknown) || errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("blocked write: %v; want ErrOutcomeUnknown only", err)
	}

	// A cancelled request abandons its call too.
	ctx, cancel = context.WithCancel(t.Context())
	cancelled := make(chan error, 1)
	go func() { _, err := cluster.Call(ctx, s, "cancelled read", blocked); cancelled <- err }()
	cancel()
	if err := <-cancelled; !errors.Is(err, cluster.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v; want ErrUnavailable wrapping context.Canceled", err)
	}

	// Fill up to the cap with short deadlines, all at once.
	var wg sync.WaitGroup
	for range cluster.MaxAbandoned - 3 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, _ = cluster.Call(ctx, s, "blocked read", blocked)
		})
	}
	wg.Wait()
	if n := s.Abandoned(); n != cluster.MaxAbandoned {
		t.Fatalf("Abandoned() = %d, want %d", n, cluster.MaxAbandoned)
	}

	// At the cap: refused at once, fn never run.
	var ran atomic.Bool
	start = time.Now()
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = cluster.Call(ctx, s, "one more", func(*zk.Conn) (int, error) { ran.Store(true); return 0, nil })
	if !errors.Is(err, cluster.ErrUnavailable) || !strings.Contains(err.Error(), "outstanding") {
		t.Fatalf("a call over the cap: %v; want ErrUnavailable saying calls are outstanding", err)
	}
	// fn not run is the proof; the bound, far under the 4.9 s budget, only
	// rules out a refusal that waited first.
	if took := time.Since(start); took > 2*time.Second || ran.Load() {
		t.Fatalf("a call over the cap took %v (ran: %v); want a refusal at once", took, ran.Load())
	}

	// ZooKeeper answers: every abandoned call is released, and calls run
	// again.
	releaseOnce.Do(func() { close(release) })
	testcluster.WaitFor(t, 5*time.Second, "abandoned calls released", func() error {
		if n := s.Abandoned(); n != 0 {
			return fmt.Errorf("%d still counted", n)
		}
		return nil
	})
	if v, err := cluster.Call(ctx, s, "released", blocked); err != nil || v != 1 {
		t.Fatalf("a call after the release: %v, %v; want 1", v, err)
	}
}

// A read whose connection closed before the answer wrote nothing:
// ErrUnavailable. A write's may have applied: ErrOutcomeUnknown, still
// ConnectionClosed underneath.
func TestCallLostAnswerOfAReadIsUnavailable(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	lost := func(*zk.Conn) (int, error) { return 0, zk.ErrConnectionClosed }
	if _, err := cluster.Call(t.Context(), s, "read", lost); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("a read's lost answer: %v; want ErrUnavailable", err)
	}
	_, err := cluster.CallWrite(t.Context(), s, "write", lost)
	if !errors.Is(err, zk.ErrConnectionClosed) || !errors.Is(err, cluster.ErrOutcomeUnknown) || errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("a write's lost answer: %v; want ErrOutcomeUnknown (zk.ErrConnectionClosed), not ErrUnavailable", err)
	}
}

// A call made with no session fails at once rather than queue in
// go-zookeeper until one comes back.
func TestCallFailsFastWithoutSession(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	z.Stop()
	testcluster.WaitFor(t, 10*time.Second, "the session to be lost", func() error {
		if state, _, _ := s.State(); state == zk.StateHasSession {
			return errors.New("still HasSession")
		}
		return nil
	})
	var ran atomic.Bool
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := cluster.Call(ctx, s, "read", func(conn *zk.Conn) ([]byte, error) {
		ran.Store(true)
		data, _, err := conn.Get("/")
		return data, err
	})
	if !errors.Is(err, cluster.ErrUnavailable) || !strings.Contains(err.Error(), "no ZooKeeper session") {
		t.Fatalf("Call without a session: %v; want ErrUnavailable, no ZooKeeper session", err)
	}
	if took := time.Since(start); took > 2*time.Second || ran.Load() { // as over the cap
		t.Fatalf("Call without a session took %v (ran: %v); want a refusal at once", took, ran.Load())
	}
}

// With a real server paused (SIGSTOP), a read returns on its budget, and
// the abandoned goroutine ends once the server is resumed and answers.
// The context is never done, so the call ends on its budget (900 ms of a
// second, named in the error) or when go-zookeeper gives up (2.7 s, an
// error naming no budget); a timer never fires early.
func TestCallBoundsAReadOfAPausedServer(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr()) // a 4 s session: go-zookeeper gives up after 2.7 s
	z.Pause()
	start := time.Now()
	_, err := cluster.Call(deadlineOnly(start.Add(time.Second)), s, "read /", func(conn *zk.Conn) ([]byte, error) {
		data, _, err := conn.Get("/")
		return data, err
	})
	took := time.Since(start)
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("a read of a paused server: %v; want ErrUnavailable", err)
	}
	if budget := budgetIn(t, err); budget > 900*time.Millisecond || took < 900*time.Millisecond {
		t.Fatalf("a read of a paused server gave up on a budget of %v after %v; want the deadline less 100 ms, 900 ms", budget, took)
	}
	if n := s.Abandoned(); n != 1 {
		t.Fatalf("Abandoned() = %d, want 1", n)
	}
	z.Resume()
	testcluster.WaitFor(t, 5*time.Second, "the abandoned read released", func() error {
		if n := s.Abandoned(); n != 0 {
			return fmt.Errorf("%d still counted", n)
		}
		return nil
	})
}

// budgetIn is the budget a call that gave up on it names in its error
// ("..., after 900ms)"); it fails the test if the error names none: the
// call ended some other way.
func budgetIn(t *testing.T, err error) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`, after ([0-9.]+[a-zµ]+)\)$`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("%v: want a call that gave up on its budget, naming it", err)
	}
	d, perr := time.ParseDuration(m[1])
	if perr != nil {
		t.Fatalf("%v: %v", err, perr)
	}
	return d
}

// Budget leaves a margin before the deadline, 10 % of what is left and at
// most 100 ms, so an answer leaves in time; no deadline, no budget.
func TestBudgetLeavesTheAnswerItsMargin(t *testing.T) {
	if _, ok := cluster.Budget(context.Background()); ok {
		t.Fatal("a context without deadline has a budget")
	}
	for _, tc := range []struct{ left, margin time.Duration }{
		{5 * time.Second, 100 * time.Millisecond},
		{500 * time.Millisecond, 50 * time.Millisecond},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.left)
		budget, ok := cluster.Budget(ctx)
		cancel()
		if want := tc.left - tc.margin; !ok || budget > want || budget < want-20*time.Millisecond {
			t.Errorf("budget with %v left: %v (ok %v), want about %v", tc.left, budget, ok, want)
		}
	}
}
