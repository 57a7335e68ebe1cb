package bench

import (
	"fmt"
	"hash/fnv"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// What the simulated supervisors' workers report (BenchmarkWorkerStats):
// the word count's components, each with a few streams, counting at
// steady rates since their run began, so that every heartbeat carries
// cumulative counters a little higher than the last, as a real worker's.

// simStream is one stream's rates: tuples a second, and latencies in
// microseconds a tuple.
type simStream struct {
	name                                        string
	emitted, transferred, acked, failed, execed float64
	completeUs, processUs, executeUs            float64
}

// simComponent is one component of a simulated worker.
type simComponent struct {
	name, kind string
	executors  int32
	streams    []simStream
}

// wordcountShape is the word count's spout and two bolts with two or
// three streams each, and extra streams more on every component (to
// measure a heartbeat nearer its budget).
func wordcountShape(extra int) []simComponent {
	shape := []simComponent{
		{name: "sentence", kind: "spout", executors: 1, streams: []simStream{
			{name: "default", emitted: 800, transferred: 800, acked: 800, failed: 0.5, completeUs: 4200},
			{name: "retry", emitted: 2, transferred: 2, acked: 2, failed: 0.1, completeUs: 9000},
		}},
		{name: "split", kind: "bolt", executors: 2, streams: []simStream{
			{name: "default", emitted: 4000, transferred: 4000, acked: 800, execed: 800, processUs: 150, executeUs: 120},
			{name: "long", emitted: 600, transferred: 600, acked: 100, execed: 100, processUs: 300, executeUs: 250},
			{name: "short", emitted: 200, transferred: 200, acked: 40, execed: 40, processUs: 90, executeUs: 70},
		}},
		{name: "count", kind: "bolt", executors: 3, streams: []simStream{
			{name: "default", emitted: 4800, transferred: 4800, acked: 4800, execed: 4800, processUs: 40, executeUs: 30},
			{name: "totals", emitted: 1, transferred: 1, acked: 1, execed: 1, processUs: 500, executeUs: 450},
		}},
	}
	for c := range shape {
		for e := range extra {
			shape[c].streams = append(shape[c].streams, simStream{name: fmt.Sprintf("extra-%02d", e),
				emitted: 50, transferred: 50, acked: 50, execed: 50, completeUs: 3000, processUs: 200, executeUs: 150})
		}
	}
	return shape
}

func simStreamCount(shape []simComponent) int {
	n := 0
	for _, c := range shape {
		n += len(c.streams)
	}
	return n
}

// simMetrics is what a worker of topology with shape counted from began
// to now: each rate times the seconds, scaled by a factor of 0.5 to 1.5
// that the topology's id picks, so topologies differ.
func simMetrics(shape []simComponent, topology string, began, now time.Time) *clusterv1.WorkerMetrics {
	h := fnv.New32a()
	h.Write([]byte(topology))
	secs := now.Sub(began).Seconds() * (0.5 + float64(h.Sum32()%1000)/1000)
	n := func(rate float64) uint64 { return uint64(rate * secs) }
	m := &clusterv1.WorkerMetrics{TakenUnixMs: now.UnixMilli(), StartedUnixMs: began.UnixMilli()}
	for _, c := range shape {
		for _, s := range c.streams {
			m.Streams = append(m.Streams, &clusterv1.StreamStats{
				Component: c.name, Stream: s.name, Kind: c.kind, Executors: c.executors,
				Emitted: n(s.emitted), Transferred: n(s.transferred), Acked: n(s.acked), Failed: n(s.failed), Executed: n(s.execed),
				CompleteLatencyUs: n(s.acked * s.completeUs), ProcessLatencyUs: n(s.acked * s.processUs),
				ExecuteLatencyUs: n(s.execed * s.executeUs),
			})
		}
	}
	return m
}

// workersOf is what each simulated supervisor reports of the workers
// the assignments placed on it: running, with the counters of simMetrics
// or, without metrics, none (as workers that report nothing).
func (ws *workerStatsCluster) workersOf(metrics bool) simWorkers {
	return func(i int, now time.Time) []*clusterv1.WorkerState {
		var out []*clusterv1.WorkerState
		for _, slot := range ws.placement[i] {
			w := &clusterv1.WorkerState{TopologyId: slot.topology, Port: slot.port, Pid: int32(20000 + i), State: "running"}
			if metrics {
				w.Metrics = simMetrics(ws.shape, slot.topology, ws.began, now)
			}
			out = append(out, w)
		}
		return out
	}
}
