package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// How BenchmarkScale's costs grow with the cluster (-scale-sizes): each
// size runs on a cluster of its own, and the curve compares one cost
// across sizes as a ratio, beside the ratio of the sizes themselves. A
// cost that grows no faster than the cluster has a ratio at most the size
// ratio; one that does not depend on the cluster's size, about 1.

// scaleSize is one run's cluster: simulated supervisors and topologies.
type scaleSize struct{ supervisors, topologies int }

// parseSizes reads -scale-sizes ("1000,2000,5000": N supervisors and N
// topologies each); empty, it is the one size of the other two flags.
func parseSizes(list string, supervisors, topologies int) ([]scaleSize, error) {
	if list == "" {
		return []scaleSize{{supervisors, topologies}}, nil
	}
	var out []scaleSize
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-scale-sizes: %q is not a size", f)
		}
		out = append(out, scaleSize{n, n})
	}
	return out, nil
}

// The costs the curve compares, by name as scaleReport.nums holds them.
const (
	costSubmit          = "submit, per topology (ms; 8 at a time)"
	costPlaceAll        = "every topology placed once the supervisors came (ms)"
	costRoundMean       = "the leader's scheduling round, mean (ms)"
	costLongestPerWrite = "its longest round, per assignment written (ms)"
	costFirstSchedule   = "failover: lock won to first schedule done (ms)"
	costSteadyCPU       = "leader at steady state: CPU (% of a core)"
	costSteadyRSS       = "leader at steady state: resident memory (MiB)"
)

// curveRow is one compared cost: its value per size.
type curveRow struct {
	name   string
	values []float64 // per size; NaN-free: a missing value is -1
}

// curveRows gathers, from one report per size, every cost to compare: for
// each read row, the answering nimbus's CPU per call, the calls per second
// and the p50; then the other costs.
func curveRows(reports []*scaleReport) []curveRow {
	var rows []curveRow
	value := func(r *scaleReport, f func(*scaleReport) (float64, bool)) float64 {
		if v, ok := f(r); ok {
			return v
		}
		return -1
	}
	addRow := func(name string, f func(*scaleReport) (float64, bool)) {
		row := curveRow{name: name}
		for _, r := range reports {
			row.values = append(row.values, value(r, f))
		}
		rows = append(rows, row)
	}
	for i, x := range reports[0].reads {
		read := func(r *scaleReport) (readRow, bool) {
			if i < len(r.reads) && r.reads[i].rpc == x.rpc && r.reads[i].role == x.role {
				return r.reads[i], true
			}
			return readRow{}, false
		}
		what := x.rpc + " on the " + x.role
		addRow(what+": its CPU per call (µs)", func(r *scaleReport) (float64, bool) {
			rr, ok := read(r)
			return float64(rr.perCall) / float64(time.Microsecond), ok
		})
		addRow(what+": calls per second", func(r *scaleReport) (float64, bool) { rr, ok := read(r); return rr.rate, ok })
		addRow(what+": p50 (ms)", func(r *scaleReport) (float64, bool) {
			rr, ok := read(r)
			return float64(rr.p50) / float64(time.Millisecond), ok
		})
	}
	for _, name := range []string{costSubmit, costPlaceAll, costRoundMean, costLongestPerWrite, costFirstSchedule, costSteadyCPU, costSteadyRSS} {
		addRow(name, func(r *scaleReport) (float64, bool) { v, ok := r.nums[name]; return v, ok })
	}
	return rows
}

// curveMarkdown is the curve: a table per size, then each cost per size
// and its ratio from each size to the next.
func curveMarkdown(reports []*scaleReport) string {
	var out strings.Builder
	fmt.Fprintf(&out, "Command: `go test ./bench -run '^$' -bench Scale -benchtime 1x -timeout 90m -args -scale-sizes %s -scale-results bench/RESULTS.md` (`make bench-scale`). Machine: %d cores (%s), %s; the load generator, ZooKeeper and the simulated supervisors share the cores with the 3 nimbuses. Written %s.\n",
		sizesFlag(reports), runtime.NumCPU(), cpuModel(), runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	for _, r := range reports {
		fmt.Fprintf(&out, "\n#### %d supervisors × %d topologies\n", r.size.supervisors, r.size.topologies)
		out.WriteString(r.markdown(cpuModel()))
	}
	if len(reports) < 2 {
		return out.String()
	}
	out.WriteString("\n#### How each cost grows\n\n| cost |")
	for _, r := range reports {
		fmt.Fprintf(&out, " %d |", r.size.topologies)
	}
	for i := 1; i < len(reports); i++ {
		fmt.Fprintf(&out, " %d / %d |", reports[i].size.topologies, reports[i-1].size.topologies)
	}
	out.WriteString("\n|---|")
	out.WriteString(strings.Repeat("---|", 2*len(reports)-1))
	out.WriteString("\n| the cluster (supervisors and topologies) |")
	for _, r := range reports {
		fmt.Fprintf(&out, " %d |", r.size.topologies)
	}
	for i := 1; i < len(reports); i++ {
		fmt.Fprintf(&out, " %.2fx |", float64(reports[i].size.topologies)/float64(reports[i-1].size.topologies))
	}
	for _, row := range curveRows(reports) {
		fmt.Fprintf(&out, "\n| %s |", row.name)
		for _, v := range row.values {
			fmt.Fprintf(&out, " %s |", number(v))
		}
		for i := 1; i < len(row.values); i++ {
			fmt.Fprintf(&out, " %s |", ratio(row.values[i-1], row.values[i]))
		}
	}
	out.WriteString("\n")
	return out.String()
}

func sizesFlag(reports []*scaleReport) string {
	var parts []string
	for _, r := range reports {
		parts = append(parts, strconv.Itoa(r.size.topologies))
	}
	return strings.Join(parts, ",")
}

func number(v float64) string {
	switch {
	case v < 0:
		return "-"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func ratio(from, to float64) string {
	if from <= 0 || to < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", to/from)
}

// Markers of the section of the results file the curve writes.
const (
	curveBegin = "<!-- scale curve: written by BenchmarkScale -scale-results; edits between these lines are replaced -->"
	curveEnd   = "<!-- end of the scale curve -->"
)

// writeCurve puts the curve of reports into path between the markers,
// replacing what was there, or at its end if the markers are not there yet.
// Without a path it does nothing.
func writeCurve(path string, reports []*scaleReport) error {
	if path == "" || len(reports) == 0 {
		return nil
	}
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	section := curveBegin + "\n" + curveMarkdown(reports) + curveEnd
	var out []byte
	if i, j := bytes.Index(old, []byte(curveBegin)), bytes.Index(old, []byte(curveEnd)); i >= 0 && j > i {
		out = append(append(append(out, old[:i]...), section...), old[j+len(curveEnd):]...)
	} else {
		out = append(append(append(out, old...), "\n"...), section+"\n"...)
	}
	return os.WriteFile(path, out, 0o644)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
