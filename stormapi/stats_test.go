package stormapi

import (
	"encoding/json"
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestStatsWindowOf(t *testing.T) {
	for in, want := range map[string]string{
		"": allTime, allTime: allTime, "60": "600", "600": "600", "601": "10800", "10800": "10800",
		"86400": "86400", "86401": allTime,
	} {
		if got := statsWindowOf(in); got != want {
			t.Errorf("statsWindowOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func sampleStats() *nimbusv1.TopologyStats {
	tc := &nimbusv1.TupleCounts{Emitted: 100, Transferred: 90, Acked: 50, Failed: 1, CompleteLatencyUs: 250_000, Reported: true}
	bolt := &nimbusv1.TupleCounts{Emitted: 80, Transferred: 80, Acked: 40, Executed: 40, ExecuteLatencyUs: 4_000, ProcessLatencyUs: 8_000, Reported: true}
	none := &nimbusv1.TupleCounts{}
	windows := func(c *nimbusv1.TupleCounts) []*nimbusv1.WindowCounts {
		return []*nimbusv1.WindowCounts{{Window: "600", Counts: none}, {Window: "10800", Counts: c}, {Window: "86400", Counts: c}, {Window: allTime, Counts: c}}
	}
	return &nimbusv1.TopologyStats{
		Window:   allTime,
		Topology: windows(tc),
		Components: []*nimbusv1.ComponentStats{
			{Component: "sentences", Kind: "spout", Windows: windows(tc)},
			{Component: "split", Kind: "bolt", Windows: windows(bolt), Capacity: 0.25},
		},
		Streams: []*nimbusv1.StreamCounts{
			{Component: "sentences", Stream: "default", Kind: "spout", Counts: tc},
			{Component: "split", Stream: "default", Kind: "bolt", Counts: bolt},
		},
	}
}

// Counts nobody reported are null, never zero; reported ones carry
// Storm's types (numbers, latencies as "%.3f" strings).
func TestTopologyStatsNullWithoutData(t *testing.T) {
	b, _ := json.Marshal(topologyStatsOf(nil))
	if strings.Count(string(b), "null") != 4*5 || strings.Contains(string(b), `"0"`) {
		t.Errorf("no stats: %s, want every count null", b)
	}
	got := topologyStatsOf(sampleStats())
	if got[0].Emitted != nil {
		t.Errorf("600: emitted %d, want null (nothing reported in ten minutes)", *got[0].Emitted)
	}
	if got[3].Emitted == nil || *got[3].Emitted != 100 || *got[3].CompleteLatency != "5.000" {
		t.Errorf("all time: %+v, want 100 emitted, complete latency 5.000", got[3])
	}
}

func TestBoltStatsAndMetrics(t *testing.T) {
	st := sampleStats()
	bs := boltStatsOf(componentStatsOf(st, "split"))
	if bs[3].Executed == nil || *bs[3].Executed != 40 || *bs[3].ExecuteLatency != "0.100" || *bs[3].ProcessLatency != "0.200" {
		t.Errorf("bolt all time: %+v", bs[3])
	}
	if bs[3].Capacity != nil {
		t.Errorf("capacity %s without counts in ten minutes, want null", *bs[3].Capacity)
	}
	m := metricsOf(st, "split", false)
	b, _ := json.Marshal(m)
	for _, want := range []string{`"executed":[{"stream_id":"default","component_id":"","value":40}]`, `"executed_ms_avg":[{"stream_id":"default","component_id":"","value":"0.100"}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics %s, want %s", b, want)
		}
	}
	if b, _ := json.Marshal(metricsOf(nil, "split", false)); !strings.Contains(string(b), `"executed":[]`) {
		t.Errorf("metrics without stats: %s, want empty arrays", b)
	}
	out, in := streamStatsOf(st, "split", false)
	if len(out) != 1 || len(in) != 1 || *in[0].Executed != 40 {
		t.Errorf("bolt streams: out %+v in %+v", out, in)
	}
}

// A bolt's input metrics name the component they came from (Storm's
// component_id), its output metrics none; a worker that did not say
// leaves component_id "".
func TestBoltMetricsNameTheirSource(t *testing.T) {
	rep := func(c *nimbusv1.TupleCounts) *nimbusv1.TupleCounts { c.Reported = true; return c }
	tests := []struct {
		name    string
		streams []*nimbusv1.StreamCounts
		want    map[string]string // metric key to its JSON array
		inputs  []string          // component page inputStats' components
	}{
		{
			name: "rows per source and an output row",
			streams: []*nimbusv1.StreamCounts{
				{Component: "count", Stream: "default", Kind: "bolt", Counts: rep(&nimbusv1.TupleCounts{Emitted: 7, Transferred: 7})},
				{Component: "count", Source: "split", Stream: "default", Kind: "bolt", Counts: rep(&nimbusv1.TupleCounts{Acked: 5, Executed: 5})},
				{Component: "count", Source: "words", Stream: "default", Kind: "bolt", Counts: rep(&nimbusv1.TupleCounts{Acked: 2, Failed: 1, Executed: 3})},
			},
			want: map[string]string{
				"acked":    `[{"stream_id":"default","component_id":"split","value":5},{"stream_id":"default","component_id":"words","value":2}]`,
				"failed":   `[{"stream_id":"default","component_id":"split","value":0},{"stream_id":"default","component_id":"words","value":1}]`,
				"executed": `[{"stream_id":"default","component_id":"split","value":5},{"stream_id":"default","component_id":"words","value":3}]`,
				"emitted":  `[{"stream_id":"default","component_id":"","value":7}]`,
			},
			inputs: []string{"split", "words"},
		},
		{
			name: "a worker that does not name sources",
			streams: []*nimbusv1.StreamCounts{
				{Component: "count", Stream: "default", Kind: "bolt", Counts: rep(&nimbusv1.TupleCounts{Emitted: 7, Acked: 5, Executed: 5})},
			},
			want: map[string]string{
				"acked":   `[{"stream_id":"default","component_id":"","value":5}]`,
				"emitted": `[{"stream_id":"default","component_id":"","value":7}]`,
			},
			inputs: []string{""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &nimbusv1.TopologyStats{Window: allTime, Streams: tc.streams}
			m := metricsOf(st, "count", false)
			for key, want := range tc.want {
				if b, _ := json.Marshal(m[key]); string(b) != want {
					t.Errorf("%s: %s, want %s", key, b, want)
				}
			}
			_, in := streamStatsOf(st, "count", false)
			var got []string
			for _, s := range in {
				got = append(got, s.Component)
			}
			if strings.Join(got, ",") != strings.Join(tc.inputs, ",") {
				t.Errorf("inputStats components %q, want %q", got, tc.inputs)
			}
		})
	}
}
