package supervisor

import (
	"cmp"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The heartbeat's room for workers' metrics (docs/ARCHITECTURE.md section
// 7): a supervisor's heartbeat is one ZooKeeper node, written every few
// seconds, so its size is bounded whatever the executor and stream counts.
// Each worker's metrics are kept within maxWorkerMetricsBytes, and all of
// them together within maxHeartbeatMetricsBytes or a quarter of the node
// budget, whichever is less.
const (
	maxWorkerMetricsBytes    = 8 << 10
	maxHeartbeatMetricsBytes = 32 << 10
)

// heartbeatMetricsBudget is the room for all workers' metrics in one
// heartbeat when ZooKeeper accepts requests of up to zkMaxBuffer bytes.
func heartbeatMetricsBudget(zkMaxBuffer int) int {
	return min(maxHeartbeatMetricsBytes, validate.ZKNodeBudget(zkMaxBuffer)/4)
}

// capMetrics keeps the metrics of workers within total bytes: when they
// are over, each worker gets an equal share, a worker that needs less
// leaving the rest to the others, and a worker over its share is cut by
// fitMetrics.
func capMetrics(workers []*clusterv1.WorkerState, total int) {
	sizes := make([]int, len(workers))
	var order []int
	sum := 0
	for i, w := range workers {
		if w.GetMetrics() != nil {
			sizes[i] = proto.Size(w.GetMetrics())
			sum += sizes[i]
			order = append(order, i)
		}
	}
	if sum <= total {
		return
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[a], sizes[b]) })
	left := total
	for k, i := range order {
		share := min(sizes[i], left/(len(order)-k))
		if share < sizes[i] {
			workers[i].Metrics = fitMetrics(workers[i].GetMetrics(), share)
			share = proto.Size(workers[i].GetMetrics())
		}
		left -= share
	}
}

// fitMetrics returns m cut to at most limit encoded bytes, m itself when it
// fits. What goes, in this order: streams, the least traffic first, each
// folded into its component's stream "" row (its counts kept there);
// then whole components, the least traffic first. Each stream not carried
// under its own name counts in dropped_streams. A limit too small for any
// row leaves no streams.
func fitMetrics(m *clusterv1.WorkerMetrics, limit int) *clusterv1.WorkerMetrics {
	if m == nil || proto.Size(m) <= limit {
		return m
	}
	out := cloneMetrics(m)
	named := 0
	for _, r := range out.Streams {
		if r.GetStream() != "" {
			named++
		}
	}
	// The header's size, with room for dropped_streams at its widest.
	size := proto.Size(&clusterv1.WorkerMetrics{TakenUnixMs: m.GetTakenUnixMs(), StartedUnixMs: m.GetStartedUnixMs()}) + 1 + protowire.SizeVarint(1<<32)
	for _, r := range out.Streams {
		size += rowSize(r)
	}

	// 1. Fold streams into their component's "" row.
	folded := map[string]*clusterv1.StreamStats{}
	for _, r := range out.Streams {
		if r.GetStream() == "" {
			folded[r.GetComponent()] = r
		}
	}
	byTraffic := slices.Clone(out.Streams)
	slices.SortStableFunc(byTraffic, func(a, b *clusterv1.StreamStats) int {
		return cmp.Or(cmp.Compare(traffic(a), traffic(b)), cmp.Compare(a.GetComponent(), b.GetComponent()), cmp.Compare(a.GetStream(), b.GetStream()))
	})
	gone := map[*clusterv1.StreamStats]bool{}
	for _, r := range byTraffic {
		if size <= limit {
			break
		}
		if r.GetStream() == "" {
			continue
		}
		size -= rowSize(r)
		gone[r] = true
		into := folded[r.GetComponent()]
		if into == nil {
			into = &clusterv1.StreamStats{Component: r.GetComponent(), Kind: r.GetKind()}
			folded[r.GetComponent()] = into
		} else {
			size -= rowSize(into)
		}
		addCounts(into, r)
		size += rowSize(into)
	}
	rows := make([]*clusterv1.StreamStats, 0, len(out.Streams))
	for _, r := range out.Streams {
		if !gone[r] && r.GetStream() != "" {
			rows = append(rows, r)
		}
	}
	for _, r := range folded {
		rows = append(rows, r)
	}

	// 2. Drop whole components.
	if size > limit {
		perComponent := map[string]uint64{}
		componentSize := map[string]int{}
		for _, r := range rows {
			perComponent[r.GetComponent()] += traffic(r)
			componentSize[r.GetComponent()] += rowSize(r)
		}
		components := make([]string, 0, len(perComponent))
		for c := range perComponent {
			components = append(components, c)
		}
		slices.SortFunc(components, func(a, b string) int {
			return cmp.Or(cmp.Compare(perComponent[a], perComponent[b]), cmp.Compare(a, b))
		})
		dropped := map[string]bool{}
		for _, c := range components {
			if size <= limit {
				break
			}
			dropped[c] = true
			size -= componentSize[c]
		}
		rows = slices.DeleteFunc(rows, func(r *clusterv1.StreamStats) bool { return dropped[r.GetComponent()] })
	}

	slices.SortFunc(rows, func(a, b *clusterv1.StreamStats) int {
		return cmp.Or(cmp.Compare(a.GetComponent(), b.GetComponent()), cmp.Compare(a.GetStream(), b.GetStream()))
	})
	out.Streams = rows
	carried := 0
	for _, r := range rows {
		if r.GetStream() != "" {
			carried++
		}
	}
	out.DroppedStreams += int32(named - carried)
	return out
}

// rowSize is what a row adds to its WorkerMetrics: tag, length, content.
func rowSize(r *clusterv1.StreamStats) int {
	n := proto.Size(r)
	return 1 + protowire.SizeVarint(uint64(n)) + n
}

func traffic(r *clusterv1.StreamStats) uint64 {
	return r.GetEmitted() + r.GetTransferred() + r.GetAcked() + r.GetFailed() + r.GetExecuted()
}

// addCounts adds r's counts to into's.
func addCounts(into, r *clusterv1.StreamStats) {
	into.Emitted += r.GetEmitted()
	into.Transferred += r.GetTransferred()
	into.Acked += r.GetAcked()
	into.Failed += r.GetFailed()
	into.Executed += r.GetExecuted()
	into.CompleteLatencyUs += r.GetCompleteLatencyUs()
	into.ProcessLatencyUs += r.GetProcessLatencyUs()
	into.ExecuteLatencyUs += r.GetExecuteLatencyUs()
	into.Executors = max(into.GetExecutors(), r.GetExecutors())
}

func cloneMetrics(m *clusterv1.WorkerMetrics) *clusterv1.WorkerMetrics {
	return proto.Clone(m).(*clusterv1.WorkerMetrics)
}
