package main

import (
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestWriteStats(t *testing.T) {
	info := &nimbusv1.GetTopologyInfoResponse{
		ComponentParallelism: map[string]int32{"sentences": 1, "split": 2, "count": 2},
		SpoutIds:             []string{"sentences"},
	}
	var b strings.Builder
	if err := writeStats(&b, info, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no data: no worker of this topology reported any") {
		t.Errorf("without stats:\n%s", b.String())
	}
	counts := &nimbusv1.TupleCounts{Emitted: 120, Transferred: 120, Acked: 60, CompleteLatencyUs: 300_000, Reported: true}
	bolt := &nimbusv1.TupleCounts{Emitted: 500, Executed: 120, ExecuteLatencyUs: 60_000, Reported: true}
	info.Stats = &nimbusv1.TopologyStats{
		Window:   "600",
		Topology: []*nimbusv1.WindowCounts{{Window: "600", Counts: counts}, {Window: ":all-time", Counts: counts}},
		Components: []*nimbusv1.ComponentStats{
			{Component: "sentences", Kind: "spout", Windows: []*nimbusv1.WindowCounts{{Window: "600", Counts: counts}}},
			{Component: "split", Kind: "bolt", Capacity: 0.125, Windows: []*nimbusv1.WindowCounts{{Window: "600", Counts: bolt}}},
		},
	}
	b.Reset()
	if err := writeStats(&b, info, "600"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"COUNTS (window 600)", "5.000", "0.500", "0.125", "count      bolt   2          no data"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
