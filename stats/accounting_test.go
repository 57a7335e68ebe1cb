package stats

import (
	"fmt"
	"math"
	"testing"
)

// row is one component's stream count in a report.
type row struct {
	component, stream string
	emitted           uint64
}

func rows(started, taken int64, rs ...row) Report {
	r := Report{Topology: "wc-1", Worker: WorkerID{"sup-a", 6700}, Host: "a", StartedMs: started, TakenMs: taken}
	for _, x := range rs {
		r.Streams = append(r.Streams, StreamCounts{Key: Key{Component: x.component, Stream: x.stream}, Kind: "spout", Executors: 1,
			Counts: Counts{Emitted: x.emitted}})
	}
	return r
}

// TestRunAccounting: within one run, a count is added once, whatever the
// supervisor's budget did to the rows (a stream folded into its
// component's "" row and back, a whole component left out), a stream
// missing from one report, or counters that went down.
func TestRunAccounting(t *testing.T) {
	tests := []struct {
		name    string
		reports []Report
		// all-time emitted per component
		want map[string]uint64
	}{
		{
			name: "a stream folded into the component's row and back",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "b", 100}),
				rows(t0, t0+20*sec, row{"c", "a", 200}, row{"c", "", 200}),
				rows(t0, t0+30*sec, row{"c", "a", 300}, row{"c", "b", 300}),
			},
			want: map[string]uint64{"c": 600},
		},
		{
			name: "folding that changes from report to report",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "b", 100}),
				rows(t0, t0+20*sec, row{"c", "a", 150}, row{"c", "", 150}),
				rows(t0, t0+30*sec, row{"c", "", 400}, row{"c", "b", 200}),
				rows(t0, t0+40*sec, row{"c", "a", 300}, row{"c", "b", 300}),
				rows(t0, t0+50*sec, row{"c", "", 700}),
			},
			want: map[string]uint64{"c": 700},
		},
		{
			name: "a stream missing from one report",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "b", 100}),
				rows(t0, t0+20*sec, row{"c", "a", 150}),
				rows(t0, t0+30*sec, row{"c", "a", 200}, row{"c", "b", 250}),
			},
			want: map[string]uint64{"c": 450},
		},
		{
			name: "a component left out of one report",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"d", "a", 10}),
				rows(t0, t0+20*sec, row{"d", "a", 20}),
				rows(t0, t0+30*sec, row{"c", "a", 300}, row{"d", "a", 30}),
			},
			want: map[string]uint64{"c": 300, "d": 30},
		},
		{
			name: "a folded component left out, then back",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "b", 100}),
				rows(t0, t0+20*sec, row{"c", "a", 200}, row{"c", "", 200}),
				rows(t0, t0+30*sec),
				rows(t0, t0+40*sec, row{"c", "a", 500}, row{"c", "", 500}),
			},
			want: map[string]uint64{"c": 1000},
		},
		{
			name: "counters that go down within a run are a new base, not a recount",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}),
				rows(t0, t0+20*sec, row{"c", "a", 40}),
				rows(t0, t0+30*sec, row{"c", "a", 60}),
			},
			want: map[string]uint64{"c": 120},
		},
		{
			name: "a repeated report counts once",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "b", 100}),
				rows(t0, t0+20*sec, row{"c", "a", 200}, row{"c", "", 200}),
				rows(t0, t0+20*sec, row{"c", "a", 200}, row{"c", "", 200}),
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "b", 100}),
			},
			want: map[string]uint64{"c": 400},
		},
		{
			name: "a new run counts from zero, and its folding is its own",
			reports: []Report{
				rows(t0, t0+10*sec, row{"c", "a", 100}, row{"c", "", 100}),
				rows(t0+15*sec, t0+20*sec, row{"c", "a", 10}, row{"c", "b", 10}),
			},
			want: map[string]uint64{"c": 220},
		},
		{
			name: "a run start of 0 is not a run: not counted",
			reports: []Report{
				rows(0, t0+10*sec, row{"c", "a", 100}),
				rows(0, t0+20*sec, row{"c", "a", 50}),
				rows(t0, t0+30*sec, row{"c", "a", 7}),
			},
			want: map[string]uint64{"c": 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAggregator(0)
			at := int64(0)
			for _, r := range tt.reports {
				at = max(at, r.TakenMs)
				a.Observe(r, at)
			}
			st, ok := a.Topology("wc-1", AllTime, at)
			if !ok {
				t.Fatal("no stats")
			}
			var sum uint64
			for c, want := range tt.want {
				cs := st.Components[c]
				if cs == nil {
					t.Fatalf("no component %s: %+v", c, st.Components)
				}
				if got := cs.Windows[AllTime].Emitted; got != want {
					t.Errorf("%s: all-time emitted %d, want %d", c, got, want)
				}
				if got := cs.Windows[TenMinutes].Emitted; math.Abs(float64(got)-float64(want)) > 1 {
					t.Errorf("%s: ten-minute emitted %d, want %d", c, got, want)
				}
				sum += want
			}
			if got := st.Topology[AllTime].Emitted; got != sum {
				t.Errorf("topology all-time emitted %d, want %d", got, sum)
			}
		})
	}
}

// A busy bolt stays as busy right after its worker restarts: the
// ten-minute window still holds the old run's busy time, so capacity is
// over the time the window's reports cover, not the new run's age.
func TestCapacityAfterRestart(t *testing.T) {
	a := NewAggregator(0)
	busy := func(started, taken int64, execUs uint64) Report {
		return Report{Topology: "wc-1", Worker: WorkerID{"sup-a", 6700}, StartedMs: started, TakenMs: taken,
			Streams: []StreamCounts{{Key: Key{Component: "split", Stream: "default"}, Kind: "bolt", Executors: 1, Counts: Counts{Executed: 1, ExecuteLatencyUs: execUs}}}}
	}
	// One executor half busy for an hour, reported every 10 s.
	for s := int64(10); s <= 3600; s += 10 {
		a.Observe(busy(t0, t0+s*sec, uint64(s)*500_000), t0+s*sec)
	}
	restart := t0 + 3602*sec
	a.Observe(busy(restart, restart+10*sec, 5_000_000), restart+10*sec)
	st, _ := a.Topology("wc-1", TenMinutes, restart+10*sec)
	if got := st.Components["split"].Capacity; math.Abs(got-0.5) > 0.01 {
		t.Errorf("capacity %.3f ten seconds after a restart, want about 0.5", got)
	}
	// A slot that ran nothing for longer than the window: the new run's
	// age is the time covered.
	later := restart + 3600*sec
	a.Observe(busy(later, later+10*sec, 5_000_000), later+10*sec)
	st, _ = a.Topology("wc-1", TenMinutes, later+10*sec)
	if got := st.Components["split"].Capacity; math.Abs(got-0.5) > 0.01 {
		t.Errorf("capacity %.3f of a run started after an idle hour, want about 0.5", got)
	}
}

// A worker that names new streams at every report keeps at most its own
// bound of series, by evicting the streams it stopped reporting, and
// leaves room for every other worker's.
func TestSeriesPerWorker(t *testing.T) {
	a := NewAggregator(100)
	a.maxPerWorker = 10
	for i := range 50 {
		r := rows(t0, t0+int64(i+1)*sec, row{"c", fmt.Sprintf("s%d-a", i), 1}, row{"c", fmt.Sprintf("s%d-b", i), 1})
		a.Observe(r, t0+int64(i+1)*sec)
	}
	if _, kept := a.Refused(); kept > 10 {
		t.Fatalf("a churning worker keeps %d series, over its bound of 10", kept)
	}
	other := rows(t0, t0+60*sec, row{"d", "default", 5})
	other.Topology, other.Worker = "other-2", WorkerID{"sup-b", 6700}
	a.Observe(other, t0+60*sec)
	st, ok := a.Topology("other-2", AllTime, t0+60*sec)
	if !ok || st.Components["d"].Windows[AllTime].Emitted != 5 {
		t.Fatalf("another topology's stream was not counted: %+v", st)
	}
	// The churning worker's all-time counts stay, in its topology's.
	st, _ = a.Topology("wc-1", AllTime, t0+60*sec)
	if got := st.Components["c"].Windows[AllTime].Emitted; got != 100 {
		t.Errorf("churning worker's all-time emitted %d, want 100", got)
	}
}
