package supervisor

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// manyStreams is a worker's metrics with components c00.. each with
// streams s00..; component i's stream j counts 1000*i + j + 1 tuples, so
// traffic grows with both.
func manyStreams(components, streams int) *clusterv1.WorkerMetrics {
	m := &clusterv1.WorkerMetrics{TakenUnixMs: 1_700_000_000_000, StartedUnixMs: 1_699_999_000_000}
	for i := range components {
		for j := range streams {
			n := uint64(1000*i + j + 1)
			m.Streams = append(m.Streams, &clusterv1.StreamStats{
				Component: fmt.Sprintf("c%02d", i), Stream: fmt.Sprintf("s%02d", j), Kind: "bolt", Executors: 2,
				Emitted: n, Executed: n, ExecuteLatencyUs: 10 * n,
			})
		}
	}
	return m
}

func sums(m *clusterv1.WorkerMetrics) (perComponent map[string]uint64, named int) {
	perComponent = map[string]uint64{}
	for _, r := range m.GetStreams() {
		perComponent[r.GetComponent()] += r.GetEmitted()
		if r.GetStream() != "" {
			named++
		}
	}
	return perComponent, named
}

func TestFitMetricsFoldsStreamsFirst(t *testing.T) {
	in := manyStreams(4, 10)
	if got := fitMetrics(in, proto.Size(in)); got != in {
		t.Fatal("metrics that fit were changed")
	}
	limit := proto.Size(in) - 200
	out := fitMetrics(in, limit)
	if n := proto.Size(out); n > limit {
		t.Fatalf("size %d over the limit %d", n, limit)
	}
	before, _ := sums(in)
	after, named := sums(out)
	for c, n := range before {
		if after[c] != n {
			t.Errorf("component %s counts %d after folding, want %d (folded counts kept)", c, after[c], n)
		}
	}
	if int(out.GetDroppedStreams()) != 40-named || out.GetDroppedStreams() == 0 {
		t.Errorf("dropped_streams %d, %d streams still named of 40", out.GetDroppedStreams(), named)
	}
	// The least traffic goes first: c00's low streams, never c03's busiest.
	for _, r := range out.GetStreams() {
		if r.GetComponent() == "c00" && r.GetStream() == "s00" {
			t.Error("the quietest stream stayed while others were folded")
		}
	}
	found := false
	for _, r := range out.GetStreams() {
		found = found || (r.GetComponent() == "c03" && r.GetStream() == "s09")
	}
	if !found {
		t.Error("the busiest stream was folded")
	}
	if proto.Size(in) != proto.Size(manyStreams(4, 10)) {
		t.Error("fitMetrics changed its input")
	}
}

func TestFitMetricsDropsQuietComponentsLast(t *testing.T) {
	in := manyStreams(30, 20) // 600 rows; folded, 30 rows of ~25 bytes
	const limit = 400
	out := fitMetrics(in, limit)
	if n := proto.Size(out); n > limit {
		t.Fatalf("size %d over %d", n, limit)
	}
	after, named := sums(out)
	if named != 0 {
		t.Errorf("%d streams still named: components went before streams", named)
	}
	if len(after) == 30 || len(after) == 0 {
		t.Fatalf("%d components kept; want some dropped, some kept", len(after))
	}
	// The busiest components stay, the quietest go.
	if _, ok := after["c29"]; !ok {
		t.Error("the busiest component was dropped")
	}
	if _, ok := after["c00"]; ok {
		t.Error("the quietest component was kept")
	}
	if out.GetDroppedStreams() != 600 {
		t.Errorf("dropped_streams %d, want 600", out.GetDroppedStreams())
	}
	if got := fitMetrics(in, 10); len(got.GetStreams()) != 0 || got.GetDroppedStreams() != 600 {
		t.Errorf("a limit below any row kept %d rows, dropped %d", len(got.GetStreams()), got.GetDroppedStreams())
	}
}

func TestCapMetricsKeepsTheHeartbeatWithinBudget(t *testing.T) {
	small := manyStreams(1, 2)
	workers := []*clusterv1.WorkerState{{Port: 6700, Metrics: proto.Clone(small).(*clusterv1.WorkerMetrics)}, {Port: 6701}}
	for p := range 30 {
		workers = append(workers, &clusterv1.WorkerState{Port: int32(6702 + p), Metrics: fitMetrics(manyStreams(30, 20), maxWorkerMetricsBytes)})
	}
	budget := heartbeatMetricsBudget(64 << 10) // the smallest jute.maxbuffer configs accepts
	if budget != 14<<10 {
		t.Fatalf("budget %d at 64 KiB", budget)
	}
	capMetrics(workers, budget)
	total := 0
	for _, w := range workers {
		total += proto.Size(w.GetMetrics())
	}
	if total > budget {
		t.Fatalf("metrics take %d bytes, over %d", total, budget)
	}
	if !proto.Equal(workers[0].GetMetrics(), small) {
		t.Error("a worker within its share was cut")
	}
	if workers[1].GetMetrics() != nil {
		t.Error("a worker that reported nothing got metrics")
	}
	if heartbeatMetricsBudget(1<<20-1) != maxHeartbeatMetricsBytes {
		t.Errorf("budget at ZooKeeper's default: %d", heartbeatMetricsBudget(1<<20-1))
	}
}
