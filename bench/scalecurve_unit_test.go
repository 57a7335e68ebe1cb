package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The curve compares each cost across sizes as a ratio and replaces its
// own section of the results file, leaving the rest as it was.
func TestCurveWritesItsSectionAndRatios(t *testing.T) {
	report := func(n int, perCall time.Duration, round float64) *scaleReport {
		return &scaleReport{
			size:  scaleSize{n, n},
			reads: []readRow{{rpc: "GetLeader", role: "leader", n: 10, rate: 1000, p50: time.Millisecond, perCall: perCall}},
			nums:  map[string]float64{costRoundMean: round},
		}
	}
	reports := []*scaleReport{report(1000, 10*time.Microsecond, 2), report(2000, 25*time.Microsecond, 4)}
	md := curveMarkdown(reports)
	for _, want := range []string{
		"| the cluster (supervisors and topologies) | 1000 | 2000 | 2.00x |",
		"| GetLeader on the leader: its CPU per call (µs) | 10.00 | 25.00 | 2.50x |",
		"| " + costRoundMean + " | 2.00 | 4.00 | 2.00x |",
		"| " + costSubmit + " | - | - | - |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}

	path := filepath.Join(t.TempDir(), "RESULTS.md")
	if err := os.WriteFile(path, []byte("# Results\n\nbefore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := writeCurve(path, reports); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(must(os.ReadFile(path)), "after\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := string(must(os.ReadFile(path)))
	if strings.Count(got, curveBegin) != 1 || strings.Count(got, curveEnd) != 1 || !strings.HasPrefix(got, "# Results\n\nbefore\n") ||
		strings.Count(got, "after\n") != 2 || !strings.Contains(got, "2.50x") {
		t.Fatalf("results file after two writes:\n%s", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A row measured in rounds is its median round, in the order rows first
// came, with the rounds' spread: one slow round moves neither.
func TestMedianRoundsKeepsTheMedianRoundOfEachRow(t *testing.T) {
	row := func(rpc string, perCall time.Duration, n int) readRow {
		return readRow{rpc: rpc, role: "leader", n: n, perCall: perCall * time.Microsecond}
	}
	got := medianRounds([]readRow{
		row("GetLeader", 20, 1), row("GetClusterInfo", 50, 2),
		row("GetLeader", 21, 3), row("GetClusterInfo", 120, 4), // a slow spell
		row("GetLeader", 19, 5), row("GetClusterInfo", 55, 6),
	})
	if len(got) != 2 || got[0].rpc != "GetLeader" || got[1].rpc != "GetClusterInfo" {
		t.Fatalf("rows %+v, want GetLeader then GetClusterInfo", got)
	}
	if g := got[1]; g.perCall != 55*time.Microsecond || g.n != 6 || g.rounds != 3 ||
		g.fastest != 50*time.Microsecond || g.slowest != 120*time.Microsecond {
		t.Fatalf("GetClusterInfo %+v, want the 55 µs round (n 6) of 3, spread 50-120 µs", g)
	}
	if g := got[0]; g.perCall != 20*time.Microsecond || g.n != 1 {
		t.Fatalf("GetLeader %+v, want the 20 µs round (n 1)", g)
	}
	md := (&scaleReport{size: scaleSize{1, 1}, reads: got}).markdown("cpu")
	for _, want := range []string{"median of 3 rounds", "| 55µs (median of 3: 50µs-120µs) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}

// -scale-results is taken from the repository root, as make and the
// command the curve prints give it, and a missing directory fails at once.
func TestResultsPathIsFromTheRepositoryRoot(t *testing.T) {
	got, err := resultsPath("bench/RESULTS.md")
	if err != nil || got != filepath.Join("..", "bench", "RESULTS.md") {
		t.Fatalf("resultsPath(bench/RESULTS.md) = %q, %v; want ../bench/RESULTS.md", got, err)
	}
	abs := filepath.Join(t.TempDir(), "R.md")
	if got, err := resultsPath(abs); err != nil || got != abs {
		t.Fatalf("resultsPath(%s) = %q, %v", abs, got, err)
	}
	if _, err := resultsPath("no-such-dir/R.md"); err == nil || !strings.Contains(err.Error(), "-scale-results no-such-dir/R.md") {
		t.Fatalf("resultsPath of a missing directory: %v, want an error naming the flag", err)
	}
}
