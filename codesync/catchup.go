package codesync

import (
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
)

// A follower normally lacks a new topology's code for a moment: a
// submission is acknowledged once topology.min.replication.count nimbuses
// hold it, and the others fetch it after the commit. That is catching up,
// logged at INFO. Code still missing after CatchUpWait
// (topology.max.replication.wait.time.sec, the time the cluster gives
// replication anyway) is stuck, and a WARN says so once per spell.

// catchUp remembers since when each topology's code has been missing, to
// tell catching up from stuck. Run owns it; it is not safe for concurrent
// use.
type catchUp struct {
	wait   time.Duration
	since  map[string]time.Time // first found missing, by topology id
	warned bool                 // the current spell of stuck code was warned of
}

func newCatchUp(wait time.Duration) *catchUp {
	return &catchUp{wait: wait, since: map[string]time.Time{}}
}

// observe records that missing (sorted) lack code at now, and forgets
// those that no longer do. It returns the ids missing for at least the
// wait, sorted, and when the next of the others will be (zero if none).
func (c *catchUp) observe(missing []string, now time.Time) (stuck []string, next time.Time) {
	for id := range c.since {
		if !slices.Contains(missing, id) {
			delete(c.since, id)
		}
	}
	for _, id := range missing {
		since, ok := c.since[id]
		if !ok {
			since = now
			c.since[id] = now
		}
		if due := since.Add(c.wait); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		stuck = append(stuck, id)
	}
	return stuck, next
}

// startsSpell reports whether stuck begins a spell of stuck code, the
// time to warn; an empty stuck ends the spell.
func (c *catchUp) startsSpell(stuck []string) bool {
	if len(stuck) == 0 {
		c.warned = false
		return false
	}
	if c.warned {
		return false
	}
	c.warned = true
	return true
}

// fetchFailureLevel is how loudly to log a fetch attempt that failed
// after trying for tried. No replica to fetch from is what a follower
// meets first in normal operation (the distribution appears before the
// leader's replica registers, and a replica registering retries at once):
// INFO, until it lasts the wait. Any other failure means a replica was
// there and the fetch still failed (unreachable, corrupt, no room): WARN.
func fetchFailureLevel(err error, tried, wait time.Duration) slog.Level {
	if errors.Is(err, codedistributor.ErrNotHeld) && tried < wait {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}
