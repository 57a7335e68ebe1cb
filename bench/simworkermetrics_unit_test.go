package bench

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// The simulated workers' counters rise from one heartbeat to the next on
// every stream that has a rate, keep the word count's shape, and stay
// within the supervisor's 8 KiB a worker (supervisor/metricsbudget.go),
// which the simulated supervisors do not apply, up to the widest shape
// the benchmark is run with.
func TestSimMetricsRiseAndFitAWorkersBudget(t *testing.T) {
	began := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	now := began.Add(24 * time.Hour)
	a := simMetrics(wordcountShape(0), "tiny-00001-1", began, now)
	b := simMetrics(wordcountShape(0), "tiny-00001-1", began, now.Add(5*time.Second))
	if len(a.Streams) != 7 {
		t.Fatalf("%d streams, want the word count's 3 components with 7 streams", len(a.Streams))
	}
	components := map[string]bool{}
	for i, s := range b.Streams {
		components[s.GetComponent()] = true
		if s.GetEmitted() <= a.Streams[i].GetEmitted() || s.GetAcked() <= a.Streams[i].GetAcked() {
			t.Errorf("%s/%s did not rise in 5 s: %v then %v", s.GetComponent(), s.GetStream(), a.Streams[i], s)
		}
	}
	if len(components) != 3 {
		t.Errorf("components %v", components)
	}
	if other := simMetrics(wordcountShape(0), "tiny-00002-1", began, now); proto.Equal(other, a) {
		t.Error("two topologies count the same")
	}
	const perWorker = 8 << 10
	if n := proto.Size(a); n > perWorker/8 {
		t.Errorf("the word count's shape takes %d bytes a worker", n)
	}
	if n := proto.Size(simMetrics(wordcountShape(38), "tiny-00001-1", began, now)); n > perWorker || n < perWorker*3/4 {
		t.Errorf("38 extra streams a component take %d bytes a worker, want near but within %d", n, perWorker)
	}
}
