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
