package stats

import (
	"testing"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Every counter goes in and out of both messages by name.
func TestCountsInMessages(t *testing.T) {
	c := Counts{1, 2, 3, 4, 5, 6, 7, 8}
	row, tuples := &clusterv1.StreamStats{Component: "c"}, &nimbusv1.TupleCounts{Reported: true}
	SetCounts(row, c)
	SetCounts(tuples, c)
	if row.GetEmitted() != 1 || row.GetExecuteLatencyUs() != 8 || tuples.GetFailed() != 4 || tuples.GetProcessLatencyUs() != 7 {
		t.Fatalf("set: %v, %v", row, tuples)
	}
	if got := CountsOf(row); got != c {
		t.Errorf("CountsOf(StreamStats) = %+v, want %+v", got, c)
	}
	if got := CountsOf(tuples); got != c {
		t.Errorf("CountsOf(TupleCounts) = %+v, want %+v", got, c)
	}
	if got := CountsOf((*nimbusv1.TupleCounts)(nil)); got != (Counts{}) {
		t.Errorf("CountsOf(nil) = %+v", got)
	}
	if got := c.Share(2); got != (Counts{0, 1, 1, 2, 2, 3, 3, 4}) {
		t.Errorf("Share(2) = %+v", got)
	}
}
