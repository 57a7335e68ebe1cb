package supervisor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/stats"
	"github.com/nimbusha/nimbus/workerproto"
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
	if got := fitMetrics(in, proto.Size(in), nil); got != in {
		t.Fatal("metrics that fit were changed")
	}
	limit := proto.Size(in) - 200
	out := fitMetrics(in, limit, nil)
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
	// By name, the last first: c03's last streams go, c00's first stays.
	kept := map[string]bool{}
	for _, r := range out.GetStreams() {
		kept[r.GetComponent()+"/"+r.GetStream()] = true
	}
	if !kept["c00/s00"] || kept["c03/s09"] {
		t.Errorf("rows %v: want c03/s09 folded first and c00/s00 kept", kept)
	}
	if proto.Size(in) != proto.Size(manyStreams(4, 10)) {
		t.Error("fitMetrics changed its input")
	}
}

func TestFitMetricsDropsComponentsLast(t *testing.T) {
	in := manyStreams(30, 20) // 600 rows; folded, 30 rows of ~25 bytes
	const limit = 400
	out := fitMetrics(in, limit, nil)
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
	// By name, the last first.
	if _, ok := after["c00"]; !ok {
		t.Error("the first component by name was dropped")
	}
	if _, ok := after["c29"]; ok {
		t.Error("the last component by name was kept")
	}
	if out.GetDroppedStreams() != 600 {
		t.Errorf("dropped_streams %d, want 600", out.GetDroppedStreams())
	}
	if got := fitMetrics(in, 10, nil); len(got.GetStreams()) != 0 || got.GetDroppedStreams() != 600 {
		t.Errorf("a limit below any row kept %d rows, dropped %d", len(got.GetStreams()), got.GetDroppedStreams())
	}
}

func TestCapMetricsKeepsTheHeartbeatWithinBudget(t *testing.T) {
	small := manyStreams(1, 2)
	workers := []*clusterv1.WorkerState{{Port: 6700, Metrics: proto.Clone(small).(*clusterv1.WorkerMetrics)}, {Port: 6701}}
	for p := range 30 {
		workers = append(workers, &clusterv1.WorkerState{Port: int32(6702 + p), Metrics: fitMetrics(manyStreams(30, 20), maxWorkerMetricsBytes, nil)})
	}
	budget := heartbeatMetricsBudget(64 << 10) // the smallest jute.maxbuffer configs accepts
	if budget != 14<<10 {
		t.Fatalf("budget %d at 64 KiB", budget)
	}
	capMetrics(workers, nil, budget)
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

// Folding goes by name, not by traffic: the same names fold the same way
// whatever they counted, so a stream does not move in and out of its
// component's row from one heartbeat to the next.
func TestFitMetricsFoldsByName(t *testing.T) {
	quiet, busy := manyStreams(4, 10), manyStreams(4, 10)
	for i := range busy.GetStreams() {
		// Counts of the same encoded size, in the reverse order of traffic.
		q, b := quiet.GetStreams()[i], busy.GetStreams()[i]
		q.Emitted, q.Executed, q.ExecuteLatencyUs = uint64(200+i), uint64(200+i), uint64(200+i)
		b.Emitted, b.Executed, b.ExecuteLatencyUs = uint64(240-i), uint64(240-i), uint64(240-i)
	}
	limit := proto.Size(quiet) - 200
	a, b := fitMetrics(quiet, limit, &carriage{}), fitMetrics(busy, limit, &carriage{})
	var na, nb []string
	for _, r := range a.GetStreams() {
		na = append(na, r.GetComponent()+"/"+r.GetStream())
	}
	for _, r := range b.GetStreams() {
		nb = append(nb, r.GetComponent()+"/"+r.GetStream())
	}
	if !slices.Equal(na, nb) {
		t.Errorf("folding depends on traffic: %v and %v", na, nb)
	}
}

// Whatever room each heartbeat gives a worker, the nimbus's all-time
// counts of what the heartbeats carried equal what the worker counted:
// folding and leaving out never make a count go twice or vanish.
func TestBudgetNeverRecounts(t *testing.T) {
	const started, beat = int64(1_700_000_000_000), int64(5_000)
	var c carriage
	agg := stats.NewAggregator(0)
	rng := rand.New(rand.NewPCG(1, 2))
	m := manyStreams(6, 8)
	m.StartedUnixMs = started
	full := proto.Size(m)
	for i := range 60 {
		for _, r := range m.GetStreams() {
			r.Emitted += uint64(rng.IntN(1000))
		}
		m.TakenUnixMs = started + int64(i+1)*beat
		limit := 60 + rng.IntN(full) // from room for a row or two to all it needs
		carried := fitMetrics(cloneMetrics(m), limit, &c)
		r := stats.Report{Topology: "t", Worker: stats.WorkerID{Supervisor: "s", Port: 6700}, StartedMs: started, TakenMs: carried.GetTakenUnixMs()}
		for _, row := range carried.GetStreams() {
			r.Streams = append(r.Streams, stats.StreamCounts{Key: stats.Key{Component: row.GetComponent(), Stream: row.GetStream()},
				Kind: row.GetKind(), Executors: row.GetExecutors(), Counts: stats.CountsOf(row)})
		}
		agg.Observe(r, r.TakenMs)
	}
	// A last heartbeat with room for everything the run still carries.
	m.TakenUnixMs += beat
	last := fitMetrics(cloneMetrics(m), 1<<20, &c)
	r := stats.Report{Topology: "t", Worker: stats.WorkerID{Supervisor: "s", Port: 6700}, StartedMs: started, TakenMs: m.TakenUnixMs}
	for _, row := range last.GetStreams() {
		r.Streams = append(r.Streams, stats.StreamCounts{Key: stats.Key{Component: row.GetComponent(), Stream: row.GetStream()},
			Kind: row.GetKind(), Counts: stats.CountsOf(row)})
	}
	agg.Observe(r, r.TakenMs)
	st, _ := agg.Topology("t", stats.AllTime, r.TakenMs)
	want, _ := sums(m)
	for comp, n := range want {
		if got := st.Components[comp].Windows[stats.AllTime].Emitted; got != n {
			t.Errorf("%s: all-time emitted %d, want the worker's %d", comp, got, n)
		}
	}
}

// A bolt's input rows of one stream differ by source: each is a row of
// its own under the budget, folded by (component, stream, source), the
// last first, its counts kept in the component's "" row.
func TestFitMetricsKeysRowsBySource(t *testing.T) {
	in := &clusterv1.WorkerMetrics{TakenUnixMs: 2, StartedUnixMs: 1, Streams: []*clusterv1.StreamStats{
		{Component: "count", Source: "split", Stream: "default", Kind: "bolt", Acked: 5, Executed: 5},
		{Component: "count", Source: "words", Stream: "default", Kind: "bolt", Acked: 7, Executed: 7},
		{Component: "count", Stream: "default", Kind: "bolt", Emitted: 3},
	}}
	for _, tc := range []struct {
		name  string
		limit int
		want  []string // component<-source/stream of the rows kept
	}{
		{"room for all", proto.Size(in), []string{"count<-/default", "count<-split/default", "count<-words/default"}},
		{"room for two", proto.Size(in) - 4, []string{"count<-/", "count<-/default", "count<-split/default"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &carriage{}
			out := fitMetrics(in, tc.limit, c)
			var got []string
			var acked uint64
			for _, r := range out.GetStreams() {
				got = append(got, r.GetComponent()+"<-"+r.GetSource()+"/"+r.GetStream())
				acked += r.GetAcked()
			}
			if slices.Sort(got); !slices.Equal(got, tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			if acked != 12 {
				t.Errorf("acked %d after fitting, want 12 (folded counts kept)", acked)
			}
			if out != in && (!c.named[rowKey{"count", "split", "default"}] || !c.folded[rowKey{"count", "words", "default"}]) {
				t.Errorf("carriage names %v and folds %v, want split named and words folded", c.named, c.folded)
			}
		})
	}
	row := toProto(workerproto.Metrics{StartedUnixMs: 1, Streams: []workerproto.StreamCounts{
		{Component: "count", Source: "split", Stream: "default", Kind: "bolt", Acked: 5}}}).GetStreams()[0]
	if row.GetSource() != "split" || row.GetAcked() != 5 {
		t.Errorf("toProto row %v, want source split and acked 5", row)
	}
}
