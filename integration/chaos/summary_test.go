package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one daemon's footprint at one moment.
type sample struct {
	process    string // the process's name: restarts have their own
	rssKiB     int64  // VmRSS; -1 if unreadable
	goroutines int    // go_goroutines; -1 if unreadable
}

// sample measures every daemon: RSS from /proc, goroutines from its
// metrics page.
func (r *run) sample() map[string]sample {
	out := map[string]sample{}
	for _, d := range append(slices.Clone(r.nimbuses), r.sups...) {
		p := d.proc()
		s := sample{process: p.Name, rssKiB: -1, goroutines: -1}
		if n, err := goroutines(p); err == nil {
			s.goroutines = n
		}
		s.rssKiB = rss(p.Pid())
		out[d.name] = s
	}
	return out
}

// rss reads a process's VmRSS in KiB; -1 if it cannot.
func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// percentiles gives p50, p99 and the maximum of ds, rounded; "-" for none.
func percentiles(ds []time.Duration) (p50, p99, most string) {
	rec := slices.Clone(ds)
	slices.Sort(rec)
	pct := func(p float64) string {
		if len(rec) == 0 {
			return "-"
		}
		return rec[min(len(rec)-1, int(p*float64(len(rec))))].Round(10 * time.Millisecond).String()
	}
	return pct(0.5), pct(0.99), pct(1)
}

// writeSummary writes summary.md into the run's dir (kept under
// CHAOS_DIR): what was injected and checked, how fast the cluster came
// back, and the daemons' memory and goroutines before the faults and after
// the heal, ready to paste into bench/RESULTS.md.
func (r *run) writeSummary(took time.Duration) {
	r.mu.Lock()
	kinds := make([]string, 0, len(r.faults))
	total := 0
	for k, n := range r.faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	slices.Sort(kinds)
	h50, h99, hmax := percentiles(r.healed)
	l50, l99, lmax := percentiles(r.recoveries)
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos run, seed %d\n\n", r.set.seed)
	fmt.Fprintf(&b, "Replay: `CHAOS_SEED=%d %s go test ./integration/chaos -run TestChaos -count=1`\n\n", r.set.seed, r.set.env())
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| run | %s of faults (%s) |\n", took.Round(time.Second), r.set)
	fmt.Fprintf(&b, "| faults | %d: %s |\n", total, strings.Join(kinds, ", "))
	fmt.Fprintf(&b, "| operations checked by Porcupine | %d (%d of unknown outcome): %s in %s; with linearizable reads: %s |\n",
		r.checked, r.checkedUnknown, r.checkResult, r.checkTook.Round(time.Millisecond), r.strictResult)
	fmt.Fprintf(&b, "| recovery, from a fault's end to a leader's write (%d) | p50 %s, p99 %s, max %s |\n", len(r.healed), h50, h99, hmax)
	fmt.Fprintf(&b, "| recovery, from losing the leader to a leader's write (%d) | p50 %s, p99 %s, max %s |\n", len(r.recoveries), l50, l99, lmax)
	if len(r.codeRecoveries) > 0 {
		c50, c99, cmax := percentiles(r.codeRecoveries)
		fmt.Fprintf(&b, "| code back at %d nimbuses after every nimbus's was wiped (%d) | p50 %s, p99 %s, max %s |\n",
			minReplicas, len(r.codeRecoveries), c50, c99, cmax)
	}
	if len(r.handOvers) > 0 {
		o50, o99, omax := percentiles(r.leaderless)
		fmt.Fprintf(&b, "| hand-overs | %v; without a leader (leaderless_ms, %d): p50 %s, p99 %s, max %s |\n",
			r.handOvers, len(r.leaderless), o50, o99, omax)
	}
	if len(r.resetChanges) > 0 {
		fmt.Fprintf(&b, "| leader changes under a reset rule on the leader's port, until %s after it | %s |\n", resetAfter, resetChanges(r.resetChanges))
	}
	fmt.Fprintf(&b, "| writes sent to deposed leaders | %d, rejected %d (%d fenced) |\n", r.staleSent, r.staleRejected, r.staleFenced)
	fmt.Fprintf(&b, "| client calls | ok %v, failed %v, refused for the topology's status %v; SDK %s |\n", r.ops, r.opErrors, r.refused, r.sdk.snapshot())
	fmt.Fprintf(&b, "| violations | %d |\n\n", len(r.violations))
	fmt.Fprintf(&b, "| daemon | RSS before | RSS after | goroutines before | goroutines after | process after |\n|---|---|---|---|---|---|\n")
	for _, d := range append(slices.Clone(r.nimbuses), r.sups...) {
		before, after := r.samples[0][d.name], r.samples[1][d.name]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", d.name, mib(before.rssKiB), mib(after.rssKiB),
			count(before.goroutines), count(after.goroutines), after.process)
	}
	for _, v := range r.violations {
		fmt.Fprintf(&b, "\nVIOLATION: %s\n", v)
	}
	r.mu.Unlock()
	path := filepath.Join(r.dir, "summary.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		r.t.Errorf("chaos: summary: %v", err)
	}
	r.t.Logf("chaos: summary (%s):\n%s", path, b.String())
}

// resetChanges sums up the leader changes counted under each reset of the
// leader's connections: at most one each, or it is a violation.
func resetChanges(changes []int) string {
	if len(changes) == 0 {
		return "-"
	}
	total := 0
	for _, n := range changes {
		total += n
	}
	return fmt.Sprintf("%d in %d faults, at most %d in one", total, len(changes), slices.Max(changes))
}

func mib(kib int64) string {
	if kib < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
