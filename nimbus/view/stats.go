package view

import (
	"context"
	"maps"
	"slices"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/stats"
)

// Worker metrics (docs/ARCHITECTURE.md section 21): every nimbus, leader
// or not, reads the supervisors' heartbeats once per heartbeat period and
// adds the counts their workers report to its own aggregator (package
// stats), so that any nimbus answers with the windows, and a follower that
// becomes leader keeps its all-time counts.

// statsRead is how often RunStats has the supervisors' heartbeats read
// again: the finest window's bucket. Counters are cumulative, so reading
// less often than supervisors beat loses nothing, and every nimbus reading
// every supervisor's node each beat would cost ZooKeeper nimbuses ×
// supervisors reads per beat. A read for an answer (freshenHeartbeats)
// comes in between.
const statsRead = 20 * time.Second

// RunStats reads the supervisors' heartbeats into v.Stats: every
// statsRead it has the /supervisors cache read their payloads again, and
// observes each publish. It returns when ctx ends.
func (v *View) RunStats(ctx context.Context) {
	tick := time.NewTicker(max(statsRead, v.beats.every))
	defer tick.Stop()
	observed := map[stats.WorkerID]int64{}
	for {
		changed := v.Supervisors.Changed()
		observed = v.observeHeartbeats(observed)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
			v.freshenHeartbeats()
		}
	}
}

// observeHeartbeats adds what each reported worker counted, and forgets
// the topologies /storms no longer holds (once it has been read). A
// worker's report whose time was observed already (observed, by worker)
// is not converted again; it returns the times observed now.
func (v *View) observeHeartbeats(observed map[stats.WorkerID]int64) map[stats.WorkerID]int64 {
	now := v.now().UnixMilli()
	seen := make(map[stats.WorkerID]int64, len(observed))
	for id, info := range v.Supervisors.Snapshot() {
		for _, w := range info.GetWorkers() {
			m := w.GetMetrics()
			if m == nil || w.GetTopologyId() == "" {
				continue
			}
			worker := stats.WorkerID{Supervisor: id, Port: w.GetPort()}
			seen[worker] = m.GetTakenUnixMs()
			if taken, ok := observed[worker]; !ok || taken != m.GetTakenUnixMs() {
				v.Stats.Observe(reportOf(id, info.GetHost(), w, m), now)
			}
		}
	}
	select {
	case <-v.Storms.Loaded():
		storms := v.Storms.Snapshot()
		v.Stats.Sweep(now, func(id string) bool { _, ok := storms[id]; return ok })
	default:
	}
	return seen
}

// reportOf is worker w's report, which supervisor sup (on host) carries.
func reportOf(sup, host string, w *clusterv1.WorkerState, m *clusterv1.WorkerMetrics) stats.Report {
	r := stats.Report{
		Topology: w.GetTopologyId(), Worker: stats.WorkerID{Supervisor: sup, Port: w.GetPort()}, Host: host,
		StartedMs: m.GetStartedUnixMs(), TakenMs: m.GetTakenUnixMs(),
		Streams: make([]stats.StreamCounts, 0, len(m.GetStreams())),
	}
	for _, s := range m.GetStreams() {
		r.Streams = append(r.Streams, stats.StreamCounts{
			Key: stats.Key{Component: s.GetComponent(), Source: s.GetSource(), Stream: s.GetStream()}, Kind: s.GetKind(), Executors: s.GetExecutors(),
			Counts: stats.CountsOf(s),
		})
	}
	return r
}

// TopologyStats is topology id's counts, with streams and workers in
// window w; nil when no worker of it reported any.
func (v *View) TopologyStats(id string, w stats.Window) *nimbusv1.TopologyStats {
	st, ok := v.Stats.Topology(id, w, v.now().UnixMilli())
	if !ok {
		return nil
	}
	out := &nimbusv1.TopologyStats{Window: w.String()}
	for _, win := range stats.Windows {
		out.Topology = append(out.Topology, &nimbusv1.WindowCounts{Window: win.String(), Counts: tupleCounts(st.Topology[win])})
	}
	for _, c := range sortedKeys(st.Components) {
		cs := st.Components[c]
		pc := &nimbusv1.ComponentStats{Component: c, Kind: cs.Kind, Capacity: cs.Capacity}
		for _, win := range stats.Windows {
			pc.Windows = append(pc.Windows, &nimbusv1.WindowCounts{Window: win.String(), Counts: tupleCounts(cs.Windows[win])})
		}
		out.Components = append(out.Components, pc)
	}
	for _, s := range st.Streams {
		out.Streams = append(out.Streams, &nimbusv1.StreamCounts{Component: s.Component, Source: s.Source, Stream: s.Stream, Kind: s.Kind, Counts: tupleCounts(s.Totals)})
	}
	for _, ws := range st.Workers {
		out.Workers = append(out.Workers, &nimbusv1.WorkerComponentStats{
			SupervisorId: ws.Worker.Supervisor, Host: ws.Host, Port: ws.Worker.Port, Component: ws.Component,
			Executors: ws.Executors, Counts: tupleCounts(ws.Totals), Capacity: ws.Capacity,
		})
	}
	return out
}

func tupleCounts(t stats.Totals) *nimbusv1.TupleCounts {
	out := &nimbusv1.TupleCounts{Reported: t.Reported}
	stats.SetCounts(out, t.Counts)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
