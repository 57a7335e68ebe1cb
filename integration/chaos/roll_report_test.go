package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// passResult is what one pass of a roll did.
type passResult struct {
	name           string
	took           time.Duration
	calls          callTotals // the workload's and the reader's, during the pass
	sdk            sdkFigures // what the SDK did behind their backs
	restarts       int        // workers their supervisor's stop ended
	kept           int        // workers that ran on, the same process, across their supervisor's restart
	leaderChanges  int
	nimbusRestarts int
	leaderless     time.Duration // the hand-over's leaderless_ms; -1: none (a 0.1 leader's SIGTERM handed over)
}

func (p passResult) String() string {
	return fmt.Sprintf("%s; client calls %s; SDK %s; workers restarted %d, kept %d; %d leader changes for %d nimbus restarts; hand-over without a leader: %s",
		p.took.Round(time.Second), p.calls, p.sdk, p.restarts, p.kept, p.leaderChanges, p.nimbusRestarts, p.handOver())
}

// handOver is the hand-over's time without a leader, or why there is none.
func (p passResult) handOver() string {
	if p.leaderless < 0 {
		return "- (release 0.1 leader: its SIGTERM handed over)"
	}
	return p.leaderless.String()
}

// callTotals counts client calls: answered, failed, refused for the
// topology's status (an answer too).
type callTotals struct{ ok, failed, refused int }

func (c callTotals) minus(d callTotals) callTotals {
	return callTotals{c.ok - d.ok, c.failed - d.failed, c.refused - d.refused}
}

func (c callTotals) String() string {
	return fmt.Sprintf("%d ok, %d failed, %d refused for the topology's status", c.ok, c.failed, c.refused)
}

// callTotals sums the run's client calls so far.
func (r *run) callTotals() callTotals {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c callTotals
	for _, n := range r.ops {
		c.ok += n
	}
	for _, n := range r.opErrors {
		c.failed += n
	}
	for _, n := range r.refused {
		c.refused += n
	}
	return c
}

// reportRoll fails the run on any failed client call, and writes what each
// pass did as roll.md into the run's directory (kept under ROLL_DIR),
// ready for bench/RESULTS.md, and into the log.
func (r *run) reportRoll(passes []passResult, took time.Duration) {
	if c := r.callTotals(); c.failed > 0 {
		r.mu.Lock()
		failures := strings.Join(r.failures, "; ")
		r.mu.Unlock()
		r.violation("%d client calls failed during the roll; the first: %s", c.failed, failures)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| pass | time | client calls: failed (goal 0) / ok / refused for the status | SDK retries, redirects, reads sent on | worker restarts (kept) | leader changes (nimbus restarts) | hand-over leaderless_ms |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|\n")
	for _, p := range passes {
		fmt.Fprintf(&b, "| %s | %s | %d / %d / %d | %d, %d, %d | %d (%d) | %d (%d) | %s |\n",
			p.name, p.took.Round(time.Second), p.calls.failed, p.calls.ok, p.calls.refused,
			p.sdk.retries, p.sdk.redirects, p.sdk.failovers, p.restarts, p.kept, p.leaderChanges, p.nimbusRestarts, p.handOver())
	}
	fmt.Fprintf(&b, "\nTestRoll: %s in all (builds included); history: %d operations checked (%d of unknown outcome), %s; violations: %d\n",
		took.Round(time.Second), r.checked, r.checkedUnknown, r.checkResult, len(r.violations))
	for _, v := range r.violations {
		fmt.Fprintf(&b, "\nVIOLATION: %s\n", v)
	}
	path := filepath.Join(r.dir, "roll.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		r.t.Errorf("roll: summary: %v", err)
	}
	r.t.Logf("roll: summary (%s):\n%s", path, b.String())
}
