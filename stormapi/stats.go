package stormapi

import (
	"net/url"
	"strconv"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/stats"
)

// Tuple counts in Storm's fields (docs/ARCHITECTURE.md section 21). Every
// nimbus aggregates its workers' reports in Storm's windows; a count no
// worker reported in its window is null ("no data", which Datadog's check
// and storm_exporter read as 0), never a made-up zero, and the pages say
// whether any worker of the topology ever reported (statsReported).

// statsWindowOf is the Storm window the counts of a requested window
// (parseWindow's) come from: Storm's own, or for any other number of
// seconds the shortest of Storm's that covers it (Datadog's check asks
// for 60 by default), past a day all time.
func statsWindowOf(window string) string {
	n, err := strconv.ParseInt(window, 10, 64)
	if err != nil {
		return allTime
	}
	for _, w := range statsWindows[:len(statsWindows)-1] {
		if m, _ := strconv.ParseInt(w, 10, 64); n <= m {
			return w
		}
	}
	return allTime
}

// counts is one window's counts, nil if none were reported in it.
func counts(ws []*nimbusv1.WindowCounts, window string) *nimbusv1.TupleCounts {
	for _, w := range ws {
		if w.GetWindow() == window && w.GetCounts().GetReported() {
			return w.GetCounts()
		}
	}
	return nil
}

// num is a count, null without counts.
func num(c *nimbusv1.TupleCounts, f func(*nimbusv1.TupleCounts) uint64) *uint64 {
	if c == nil {
		return nil
	}
	n := f(c)
	return &n
}

// latency is an average latency in milliseconds as Storm writes it ("1.234"),
// of sumUs over n; null without counts.
func latency(c *nimbusv1.TupleCounts, sumUs, n func(*nimbusv1.TupleCounts) uint64) *string {
	if c == nil {
		return nil
	}
	ms := 0.0
	if d := n(c); d > 0 {
		ms = float64(sumUs(c)) / float64(d) / 1000
	}
	s := strconv.FormatFloat(ms, 'f', 3, 64)
	return &s
}

func emitted(c *nimbusv1.TupleCounts) uint64     { return c.GetEmitted() }
func transferred(c *nimbusv1.TupleCounts) uint64 { return c.GetTransferred() }
func acked(c *nimbusv1.TupleCounts) uint64       { return c.GetAcked() }
func failed(c *nimbusv1.TupleCounts) uint64      { return c.GetFailed() }
func executed(c *nimbusv1.TupleCounts) uint64    { return c.GetExecuted() }
func completeUs(c *nimbusv1.TupleCounts) uint64  { return c.GetCompleteLatencyUs() }
func processUs(c *nimbusv1.TupleCounts) uint64   { return c.GetProcessLatencyUs() }
func executeUs(c *nimbusv1.TupleCounts) uint64   { return c.GetExecuteLatencyUs() }

// capacityOf is a bolt's capacity as Storm writes it, null while nothing
// was reported in the last ten minutes (the window Storm computes it
// over, whatever the page's).
func capacityOf(cs *nimbusv1.ComponentStats) *string {
	if cs == nil || counts(cs.GetWindows(), "600") == nil {
		return nil
	}
	s := strconv.FormatFloat(cs.GetCapacity(), 'f', 3, 64)
	return &s
}

// componentStatsOf finds component c's stats; nil if it reported none.
func componentStatsOf(st *nimbusv1.TopologyStats, c string) *nimbusv1.ComponentStats {
	for _, cs := range st.GetComponents() {
		if cs.GetComponent() == c {
			return cs
		}
	}
	return nil
}

// topologyStatsOf is topologyStats: Storm's four windows in its order,
// whatever the requested window.
func topologyStatsOf(st *nimbusv1.TopologyStats) []windowStatsJSON {
	out := make([]windowStatsJSON, len(statsWindows))
	for i, w := range statsWindows {
		out[i] = windowStatsOf(w, counts(st.GetTopology(), w))
	}
	return out
}

func windowStatsOf(w string, c *nimbusv1.TupleCounts) windowStatsJSON {
	return windowStatsJSON{Window: w, WindowPretty: windowPretty(w),
		Emitted: num(c, emitted), Transferred: num(c, transferred), Acked: num(c, acked), Failed: num(c, failed),
		CompleteLatency: latency(c, completeUs, acked)}
}

// boltStatsOf is a bolt's counts in each of Storm's windows; its capacity
// is the last ten minutes' in each, as Storm's.
func boltStatsOf(cs *nimbusv1.ComponentStats) []boltStatsJSON {
	out := make([]boltStatsJSON, len(statsWindows))
	for i, w := range statsWindows {
		c := counts(cs.GetWindows(), w)
		out[i] = boltStatsJSON{Window: w, WindowPretty: windowPretty(w),
			Emitted: num(c, emitted), Transferred: num(c, transferred), Executed: num(c, executed),
			Acked: num(c, acked), Failed: num(c, failed), Capacity: capacityOf(cs),
			ExecuteLatency: latency(c, executeUs, executed), ProcessLatency: latency(c, processUs, acked)}
	}
	return out
}

// spoutSummaryOf is a spout's counts in each of Storm's windows.
func spoutSummaryOf(cs *nimbusv1.ComponentStats) []windowStatsJSON {
	out := make([]windowStatsJSON, len(statsWindows))
	for i, w := range statsWindows {
		out[i] = windowStatsOf(w, counts(cs.GetWindows(), w))
	}
	return out
}

// streamsOf are component c's streams in the stats' window.
func streamsOf(st *nimbusv1.TopologyStats, c string) []*nimbusv1.StreamCounts {
	var out []*nimbusv1.StreamCounts
	for _, s := range st.GetStreams() {
		if s.GetComponent() == c {
			out = append(out, s)
		}
	}
	return out
}

// reported is s's counts, nil if none were reported in the window.
func reported(c *nimbusv1.TupleCounts) *nimbusv1.TupleCounts {
	if !c.GetReported() {
		return nil
	}
	return c
}

// outputStatJSON is one stream a component emitted on (component page).
type outputStatJSON struct {
	Stream          string  `json:"stream"`
	Emitted         *uint64 `json:"emitted"`
	Transferred     *uint64 `json:"transferred"`
	Acked           *uint64 `json:"acked,omitempty"`
	Failed          *uint64 `json:"failed,omitempty"`
	CompleteLatency *string `json:"completeLatency,omitempty"`
}

// inputStatJSON is one stream a bolt received from one component
// (component page); component is "" when the worker did not say which.
type inputStatJSON struct {
	Component          string  `json:"component"`
	EncodedComponentID string  `json:"encodedComponentId"`
	Stream             string  `json:"stream"`
	Executed           *uint64 `json:"executed"`
	Acked              *uint64 `json:"acked"`
	Failed             *uint64 `json:"failed"`
	ExecuteLatency     *string `json:"executeLatency"`
	ProcessLatency     *string `json:"processLatency"`
}

// streamStatsOf are a component page's outputStats and, for a bolt,
// inputStats.
func streamStatsOf(st *nimbusv1.TopologyStats, c string, spout bool) (outputs []outputStatJSON, inputs []inputStatJSON) {
	outputs, inputs = []outputStatJSON{}, []inputStatJSON{}
	for _, s := range streamsOf(st, c) {
		k := reported(s.GetCounts())
		if spout {
			outputs = append(outputs, outputStatJSON{Stream: s.GetStream(), Emitted: num(k, emitted), Transferred: num(k, transferred),
				Acked: num(k, acked), Failed: num(k, failed), CompleteLatency: latency(k, completeUs, acked)})
			continue
		}
		if k == nil || k.GetEmitted()+k.GetTransferred() > 0 {
			outputs = append(outputs, outputStatJSON{Stream: s.GetStream(), Emitted: num(k, emitted), Transferred: num(k, transferred)})
		}
		if k == nil || k.GetExecuted()+k.GetAcked()+k.GetFailed() > 0 {
			inputs = append(inputs, inputStatJSON{Component: s.GetSource(), EncodedComponentID: url.PathEscape(s.GetSource()),
				Stream: s.GetStream(), Executed: num(k, executed), Acked: num(k, acked),
				Failed: num(k, failed), ExecuteLatency: latency(k, executeUs, executed), ProcessLatency: latency(k, processUs, acked)})
		}
	}
	return outputs, inputs
}

// executorCounts is an executor's share of its worker's counts of
// component c in the stats' window: workers count per component, so each
// executor shows an even share. Nil when its worker reported none.
func executorCounts(st *nimbusv1.TopologyStats, e *nimbusv1.ExecutorSummary) (*nimbusv1.TupleCounts, float64) {
	for _, w := range st.GetWorkers() {
		if w.GetSupervisorId() != e.GetSupervisorId() || w.GetPort() != e.GetPort() || w.GetComponent() != e.GetExecutor().GetComponentId() {
			continue
		}
		c := reported(w.GetCounts())
		if c == nil {
			return nil, 0
		}
		share := &nimbusv1.TupleCounts{Reported: true}
		stats.SetCounts(share, stats.CountsOf(c).Share(uint64(max(w.GetExecutors(), 1))))
		return share, w.GetCapacity()
	}
	return nil, 0
}

// metricJSON is one entry of /topology/:id/metrics: a stream's value.
type metricJSON struct {
	StreamID    string `json:"stream_id"`
	ComponentID string `json:"component_id"`
	Value       any    `json:"value"`
}

// metricsOf is component c's entry of /topology/:id/metrics: per stream
// in the stats' window, each metric an array (empty without counts). A
// bolt's input metrics (acked, failed, executed and their latencies) are
// per source component and stream, as Storm's: component_id names the
// source, "" when the worker did not say; its emitted and transferred are
// per stream. A bolt's row with a source holds only input counts, and one
// without a source but with emitted tuples only output counts (a worker
// that counts per source writes them apart).
func metricsOf(st *nimbusv1.TopologyStats, c string, spout bool) map[string]any {
	keys := []string{"emitted", "transferred", "acked", "failed"}
	if spout {
		keys = append(keys, "complete_ms_avg")
	} else {
		keys = append(keys, "executed", "executed_ms_avg", "process_ms_avg")
	}
	m := map[string]any{"id": c, "encodedId": url.PathEscape(c)}
	lists := map[string][]metricJSON{}
	for _, k := range keys {
		lists[k] = []metricJSON{}
	}
	for _, s := range streamsOf(st, c) {
		k := reported(s.GetCounts())
		if k == nil {
			continue
		}
		add := func(key, component string, v any) {
			lists[key] = append(lists[key], metricJSON{StreamID: s.GetStream(), ComponentID: component, Value: v})
		}
		if spout {
			add("emitted", "", k.GetEmitted())
			add("transferred", "", k.GetTransferred())
			add("acked", "", k.GetAcked())
			add("failed", "", k.GetFailed())
			add("complete_ms_avg", "", *latency(k, completeUs, acked))
			continue
		}
		out, in := k.GetEmitted()+k.GetTransferred() > 0, k.GetExecuted()+k.GetAcked()+k.GetFailed() > 0
		if s.GetSource() == "" || out {
			add("emitted", "", k.GetEmitted())
			add("transferred", "", k.GetTransferred())
		}
		if s.GetSource() != "" || in || !out {
			add("acked", s.GetSource(), k.GetAcked())
			add("failed", s.GetSource(), k.GetFailed())
			add("executed", s.GetSource(), k.GetExecuted())
			add("executed_ms_avg", s.GetSource(), *latency(k, executeUs, executed))
			add("process_ms_avg", s.GetSource(), *latency(k, processUs, acked))
		}
	}
	for k, l := range lists {
		m[k] = l
	}
	return m
}
