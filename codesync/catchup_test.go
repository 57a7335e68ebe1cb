package codesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
)

// Code missing for less than the wait is catching up; from the wait on it
// is stuck, each topology timed from when it was first found missing, and
// a topology fetched in between starts over. A spell of stuck code starts
// one warning; the next spell, after none was stuck, another.
func TestCatchUpTellsStuckFromCatchingUp(t *testing.T) {
	const wait = 10 * time.Second
	t0 := time.Unix(1_700_000_000, 0)
	c := newCatchUp(wait)
	step := func(at time.Duration, missing []string, wantStuck []string, wantNext time.Duration, wantWarn bool) {
		t.Helper()
		stuck, next := c.observe(missing, t0.Add(at))
		if !slices.Equal(stuck, wantStuck) {
			t.Errorf("at %v, missing %v: stuck %v, want %v", at, missing, stuck, wantStuck)
		}
		var want time.Time
		if wantNext >= 0 {
			want = t0.Add(wantNext)
		}
		if !next.Equal(want) {
			t.Errorf("at %v, missing %v: next %v, want %v", at, missing, next, want)
		}
		if warn := c.startsSpell(stuck); warn != wantWarn {
			t.Errorf("at %v, stuck %v: warn %v, want %v", at, stuck, warn, wantWarn)
		}
	}
	const none = -1
	step(0, nil, nil, none, false)
	step(0, []string{"a"}, nil, wait, false)
	step(4*time.Second, []string{"a", "b"}, nil, wait, false)      // b due at 14 s; a first
	step(9*time.Second, []string{"b"}, nil, 14*time.Second, false) // a fetched
	step(11*time.Second, []string{"a", "b"}, nil, 14*time.Second, false)
	step(14*time.Second, []string{"a", "b"}, []string{"b"}, 21*time.Second, true) // a, missing again, starts over
	step(21*time.Second, []string{"a", "b"}, []string{"a", "b"}, none, false)     // the same spell
	step(22*time.Second, []string{"c"}, nil, 32*time.Second, false)               // the spell ends
	step(32*time.Second, []string{"c"}, []string{"c"}, none, true)                // a new one
}

// A wait of 0 (topology.max.replication.wait.time.sec: 0, no waiting for
// replicas) makes missing code stuck at once.
func TestCatchUpWithNoWaitIsStuckAtOnce(t *testing.T) {
	c := newCatchUp(0)
	stuck, next := c.observe([]string{"a"}, time.Now())
	if !slices.Equal(stuck, []string{"a"}) || !next.IsZero() || !c.startsSpell(stuck) {
		t.Fatalf("stuck %v, next %v: want a, stuck at once", stuck, next)
	}
}

// No replica to fetch from is INFO while the wait lasts; any other failure,
// and no replica past the wait, is WARN.
func TestFetchFailureLevel(t *testing.T) {
	const wait = time.Minute
	noReplica := fmt.Errorf("%w: no other replica holds t-1-1", codedistributor.ErrNotHeld)
	for _, c := range []struct {
		err   error
		tried time.Duration
		want  slog.Level
	}{
		{noReplica, 0, slog.LevelInfo},
		{noReplica, wait - time.Millisecond, slog.LevelInfo},
		{noReplica, wait, slog.LevelWarn},
		{fmt.Errorf("download: %w", codedistributor.ErrCorrupt), 0, slog.LevelWarn},
		{errors.New("mkdir: read-only file system"), 0, slog.LevelWarn},
		{context.DeadlineExceeded, 0, slog.LevelWarn},
	} {
		if got := fetchFailureLevel(c.err, c.tried, wait); got != c.want {
			t.Errorf("%v after %v: %v, want %v", c.err, c.tried, got, c.want)
		}
	}
}
