// Package stats owns Storm's windows over worker counters: it turns the
// cumulative counts each worker run reports (emitted, transferred, acked,
// failed, executed and latency sums, per component and stream) into the
// increases within Storm's windows, 600, 10800 and 86400 seconds and
// all time, per topology, component, stream and worker, and computes
// Storm's bolt capacity.
//
// It is pure logic: no I/O, no clock of its own (every call is given its
// time), no goroutine. Memory is bounded: each series (one worker's
// counts on one component's stream) keeps a ring of buckets per window
// (windows.go), series stop being created past a cap (in all, and per
// worker slot, where a series its worker stopped reporting is evicted
// first), and a series with nothing in its longest window is folded into
// its topology's all-time total and dropped (Aggregator.Sweep).
//
//   - windows.go: the windows, their buckets, and spreading an increase
//     over the time it happened in.
//   - counts.go: Counts, the counters and latency sums, and their averages.
//   - run.go: a run's accounting, which adds each count once whatever
//     rows a report folded, left out or repeated.
//   - aggregator.go: Aggregator, which observes reports (Observe) and
//     answers a topology's stats (Topology), worker restarts and
//     vanished supervisors included.
package stats
