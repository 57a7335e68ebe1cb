package nimbus

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/nimbus/view"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/stats"
)

// maxStatsComponents bounds the components (of live topologies, system
// components left out) the worker metrics are exported for: with five
// counters, three latencies and a capacity each, at most 18,000 series.
// Past it the topologies last by name are left out whole, and
// nimbus_topology_stats_components_dropped says how many components were.
const maxStatsComponents = 2000

// statsCollector exports the workers' counts (view.Stats) per live
// topology and component, read at scrape time.
type statsCollector struct {
	v   *view.View
	now func() time.Time

	tuples, latency, capacity, dropped, series *prometheus.Desc
}

func registerStatsMetrics(reg prometheus.Registerer, v *view.View) {
	reg.MustRegister(&statsCollector{
		v: v, now: time.Now,
		tuples: prometheus.NewDesc("nimbus_topology_tuples_total",
			"Tuples a live topology's component counted (kind: emitted, transferred, acked, failed, executed) since this nimbus began reading its workers' heartbeats (Storm's all-time window as this nimbus has it).",
			[]string{"topology", "component", "kind"}, nil),
		latency: prometheus.NewDesc("nimbus_topology_latency_ms",
			"A live topology's component's average latency over the last ten minutes (kind: complete for spouts, process and execute for bolts), in milliseconds; absent with nothing reported in the window.",
			[]string{"topology", "component", "kind"}, nil),
		capacity: prometheus.NewDesc("nimbus_topology_capacity",
			"Storm's capacity of a live topology's bolt: the fraction of the last ten minutes its busiest executor spent executing.",
			[]string{"topology", "component"}, nil),
		dropped: prometheus.NewDesc("nimbus_topology_stats_components_dropped",
			"Components of live topologies left out of the per-component series by their bound (2,000 components).", nil, nil),
		series: prometheus.NewDesc("nimbus_stats_series",
			"Series (a worker's counts on one stream) the nimbus keeps for Storm's windows (state kept), and those it refused past its bound since it started (state refused).",
			[]string{"state"}, nil),
	})
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tuples, c.latency, c.capacity, c.dropped, c.series} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	refused, kept := c.v.Stats.Refused()
	ch <- prometheus.MustNewConstMetric(c.series, prometheus.GaugeValue, float64(kept), "kept")
	ch <- prometheus.MustNewConstMetric(c.series, prometheus.GaugeValue, float64(refused), "refused")
	now := c.now().UnixMilli()
	exported, dropped := 0, 0
	for _, t := range liveTopologies(c.v.Storms.Snapshot()) {
		st, ok := c.v.Stats.Topology(t.id, stats.AllTime, now)
		if !ok {
			continue
		}
		components := slices.Sorted(func(yield func(string) bool) {
			for name := range st.Components {
				if !strings.HasPrefix(name, "__") && !yield(name) {
					return
				}
			}
		})
		if exported+len(components) > maxStatsComponents {
			dropped += len(components)
			continue
		}
		exported += len(components)
		for _, name := range components {
			c.collectComponent(ch, t.name, name, st.Components[name])
		}
	}
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.GaugeValue, float64(dropped))
}

// collectComponent sends one component's series.
func (c *statsCollector) collectComponent(ch chan<- prometheus.Metric, topology, component string, cs *stats.ComponentStats) {
	all := cs.Windows[stats.AllTime]
	for kind, n := range map[string]uint64{"emitted": all.Emitted, "transferred": all.Transferred, "acked": all.Acked,
		"failed": all.Failed, "executed": all.Executed} {
		ch <- prometheus.MustNewConstMetric(c.tuples, prometheus.CounterValue, float64(n), topology, component, kind)
	}
	recent := cs.Windows[stats.TenMinutes]
	if !recent.Reported {
		return
	}
	if cs.Kind == "spout" {
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, recent.CompleteLatencyMs(), topology, component, "complete")
		return
	}
	ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, recent.ProcessLatencyMs(), topology, component, "process")
	ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, recent.ExecuteLatencyMs(), topology, component, "execute")
	ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, cs.Capacity, topology, component)
}

type liveTopology struct{ id, name string }

// liveTopologies are the topologies not killed, by name.
func liveTopologies(storms map[string]*clusterv1.StormBase) []liveTopology {
	var out []liveTopology
	for id, base := range storms {
		if base != nil && base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
			out = append(out, liveTopology{id, base.GetName()})
		}
	}
	slices.SortFunc(out, func(a, b liveTopology) int { return cmp.Compare(a.name, b.name) })
	return out
}
