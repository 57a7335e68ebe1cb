package main

import (
	"io"
	"slices"
	"strconv"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// writeStats writes the COUNTS section of topology: the topology's tuple
// counts in Storm's windows, then each component's in window, as the
// nimbus aggregated its workers' reports; "no data" where no worker
// reported, never zeros.
func writeStats(w io.Writer, info *nimbusv1.GetTopologyInfoResponse, window string) error {
	if window == "" {
		window = ":all-time"
	}
	if _, err := io.WriteString(w, "\nCOUNTS (window "+window+")\n"); err != nil {
		return err
	}
	st := info.GetStats()
	if st == nil {
		return fields(w, [][2]string{{"counts", "no data: no worker of this topology reported any"}})
	}
	rows := make([][]string, 0, len(st.GetTopology()))
	for _, wc := range st.GetTopology() {
		c := wc.GetCounts()
		rows = append(rows, append([]string{wc.GetWindow()}, orNoData(c, tupleCount(c.GetEmitted()), tupleCount(c.GetTransferred()),
			tupleCount(c.GetAcked()), tupleCount(c.GetFailed()), avgMs(c.GetCompleteLatencyUs(), c.GetAcked()))...))
	}
	if err := table(w, []string{"WINDOW", "EMITTED", "TRANSFERRED", "ACKED", "FAILED", "COMPLETE MS"}, rows); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	byName := map[string]*nimbusv1.ComponentStats{}
	for _, cs := range st.GetComponents() {
		byName[cs.GetComponent()] = cs
	}
	names := make([]string, 0, len(info.GetComponentParallelism()))
	for name := range info.GetComponentParallelism() {
		names = append(names, name)
	}
	slices.Sort(names)
	rows = rows[:0]
	for _, name := range names {
		kind := "bolt"
		if _, ok := slices.BinarySearch(info.GetSpoutIds(), name); ok {
			kind = "spout"
		}
		var c *nimbusv1.TupleCounts
		cs := byName[name]
		for _, wc := range cs.GetWindows() {
			if wc.GetWindow() == window {
				c = wc.GetCounts()
			}
		}
		latency, capacity := avgMs(c.GetCompleteLatencyUs(), c.GetAcked()), "-"
		if kind == "bolt" {
			latency, capacity = avgMs(c.GetExecuteLatencyUs(), c.GetExecuted()), strconv.FormatFloat(cs.GetCapacity(), 'f', 3, 64)
		}
		rows = append(rows, append([]string{name, kind, strconv.Itoa(int(info.GetComponentParallelism()[name]))},
			orNoData(c, tupleCount(c.GetEmitted()), tupleCount(c.GetTransferred()), tupleCount(c.GetAcked()), tupleCount(c.GetFailed()),
				tupleCount(c.GetExecuted()), latency, capacity)...))
	}
	return table(w, []string{"COMPONENT", "KIND", "EXECUTORS", "EMITTED", "TRANSFERRED", "ACKED", "FAILED", "EXECUTED", "LATENCY MS", "CAPACITY"}, rows)
}

// orNoData is values, or "no data" and dashes when c holds no report.
func orNoData(c *nimbusv1.TupleCounts, values ...string) []string {
	if c.GetReported() {
		return values
	}
	out := make([]string, len(values))
	for i := range out {
		out[i] = "-"
	}
	out[0] = "no data"
	return out
}

func tupleCount(n uint64) string { return strconv.FormatUint(n, 10) }

// avgMs is an average latency in milliseconds: sumUs over n.
func avgMs(sumUs, n uint64) string {
	if n == 0 {
		return "0.000"
	}
	return strconv.FormatFloat(float64(sumUs)/float64(n)/1000, 'f', 3, 64)
}
