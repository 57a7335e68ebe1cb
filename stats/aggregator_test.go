package stats

import (
	"errors"
	"math"
	"testing"
)

const sec = int64(1000)

// t0 is a time aligned on every bucket width (a day's multiple).
const t0 = int64(20_000) * 86_400_000

func report(startedMs, takenMs int64, emitted, executed, execUs uint64) Report {
	return Report{
		Topology: "wc-1", Worker: WorkerID{"sup-a", 6700}, Host: "a", StartedMs: startedMs, TakenMs: takenMs,
		Streams: []StreamCounts{
			{Key: Key{Component: "sentences", Stream: "default"}, Kind: "spout", Executors: 1, Counts: Counts{Emitted: emitted, Transferred: emitted, Acked: emitted, CompleteLatencyUs: emitted * 2000}},
			{Key: Key{Component: "split", Stream: "default"}, Kind: "bolt", Executors: 2, Counts: Counts{Executed: executed, ExecuteLatencyUs: execUs}},
		},
	}
}

func TestWindows(t *testing.T) {
	type obs struct {
		r   Report
		now int64
	}
	tests := []struct {
		name string
		obs  []obs
		at   int64
		// the spout's emitted count per window, and whether reported
		want    map[Window]uint64
		wantRep map[Window]bool
	}{
		{
			name: "one run reporting twice within ten minutes",
			obs:  []obs{{report(t0, t0+60*sec, 100, 0, 0), t0 + 60*sec}, {report(t0, t0+120*sec, 250, 0, 0), t0 + 120*sec}},
			at:   t0 + 120*sec,
			want: map[Window]uint64{TenMinutes: 250, ThreeHours: 250, OneDay: 250, AllTime: 250},
		},
		{
			name: "a first sighting counts the run from its start, spread over its run",
			// 1,200 s of run, 1,200 tuples: the last ten minutes hold about half
			obs:  []obs{{report(t0, t0+1200*sec, 1200, 0, 0), t0 + 1200*sec}},
			at:   t0 + 1200*sec,
			want: map[Window]uint64{TenMinutes: 600, ThreeHours: 1200, OneDay: 1200, AllTime: 1200},
		},
		{
			name: "a restart counts the new run from zero and keeps all time",
			obs: []obs{
				{report(t0, t0+60*sec, 100, 0, 0), t0 + 60*sec},
				{report(t0+70*sec, t0+120*sec, 30, 0, 0), t0 + 120*sec}, // new run: counters started again
			},
			at:   t0 + 120*sec,
			want: map[Window]uint64{TenMinutes: 130, ThreeHours: 130, OneDay: 130, AllTime: 130},
		},
		{
			name: "counters that go down within a run are a new base",
			obs: []obs{
				{report(t0, t0+60*sec, 100, 0, 0), t0 + 60*sec},
				{report(t0, t0+120*sec, 40, 0, 0), t0 + 120*sec},
			},
			at:   t0 + 120*sec,
			want: map[Window]uint64{TenMinutes: 100, AllTime: 100, ThreeHours: 100, OneDay: 100},
		},
		{
			name: "ten minutes rolls past counts, the longer windows keep them",
			obs:  []obs{{report(t0, t0+20*sec, 100, 0, 0), t0 + 20*sec}, {report(t0, t0+40*sec, 100, 0, 0), t0 + 40*sec}},
			at:   t0 + 40*sec + 700*sec,
			want: map[Window]uint64{TenMinutes: 0, ThreeHours: 100, OneDay: 100, AllTime: 100},
			// nothing reported in the last ten minutes: no data there
			wantRep: map[Window]bool{TenMinutes: false, ThreeHours: true, OneDay: true, AllTime: true},
		},
		{
			name: "a gap in reports spreads the increase over the gap",
			obs: []obs{
				{report(t0, t0+20*sec, 0, 0, 0), t0 + 20*sec},
				{report(t0, t0+1220*sec, 1200, 0, 0), t0 + 1220*sec}, // 20 minutes without a heartbeat
			},
			at:   t0 + 1220*sec,
			want: map[Window]uint64{TenMinutes: 600, ThreeHours: 1200, OneDay: 1200, AllTime: 1200},
		},
		{
			name: "a repeated heartbeat counts once",
			obs:  []obs{{report(t0, t0+60*sec, 100, 0, 0), t0 + 60*sec}, {report(t0, t0+60*sec, 100, 0, 0), t0 + 80*sec}},
			at:   t0 + 80*sec,
			want: map[Window]uint64{TenMinutes: 100, ThreeHours: 100, OneDay: 100, AllTime: 100},
		},
		{
			name: "a worker clock ahead of ours counts as now",
			obs:  []obs{{report(t0, t0+900*sec, 100, 0, 0), t0 + 60*sec}},
			at:   t0 + 60*sec,
			want: map[Window]uint64{TenMinutes: 100, ThreeHours: 100, OneDay: 100, AllTime: 100},
		},
		{
			name:    "a day later only all time holds the counts",
			obs:     []obs{{report(t0, t0+60*sec, 100, 0, 0), t0 + 60*sec}},
			at:      t0 + 60*sec + 90_000*sec,
			want:    map[Window]uint64{TenMinutes: 0, ThreeHours: 0, OneDay: 0, AllTime: 100},
			wantRep: map[Window]bool{AllTime: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAggregator(0)
			for _, o := range tt.obs {
				a.Observe(o.r, o.now)
			}
			st, ok := a.Topology("wc-1", AllTime, tt.at)
			if !ok {
				t.Fatal("no stats")
			}
			for w, want := range tt.want {
				got := st.Components["sentences"].Windows[w]
				if diff := math.Abs(float64(got.Emitted) - float64(want)); diff > 1 {
					t.Errorf("window %v: emitted %d, want %d", w, got.Emitted, want)
				}
				wantRep := true
				if tt.wantRep != nil {
					wantRep = tt.wantRep[w]
				}
				if got.Reported != wantRep {
					t.Errorf("window %v: reported %v, want %v", w, got.Reported, wantRep)
				}
				if top := st.Topology[w]; top.Emitted != got.Emitted || top.Acked != got.Acked {
					t.Errorf("window %v: topology emitted %d acked %d, want the spout's %d, %d", w, top.Emitted, top.Acked, got.Emitted, got.Acked)
				}
			}
		})
	}
}

func TestNoData(t *testing.T) {
	a := NewAggregator(0)
	if _, ok := a.Topology("wc-1", AllTime, t0); ok {
		t.Fatal("a topology nothing reported for has stats")
	}
	a.Observe(Report{Topology: "wc-1", Worker: WorkerID{"s", 1}, StartedMs: t0, TakenMs: t0 + sec}, t0+sec)
	st, ok := a.Topology("wc-1", TenMinutes, t0+sec)
	if !ok || len(st.Streams) != 0 || st.Topology[TenMinutes].Reported {
		t.Fatalf("a worker reporting no streams: %+v, %v; want stats without streams, reported nothing", st, ok)
	}
}

func TestCapacity(t *testing.T) {
	a := NewAggregator(0)
	// Two executors of split in one worker executed for 120 s in total
	// over the first 300 s of the run: 0.2 each.
	a.Observe(report(t0, t0+300*sec, 0, 1000, 120_000_000), t0+300*sec)
	st, _ := a.Topology("wc-1", TenMinutes, t0+300*sec)
	if got := st.Components["split"].Capacity; math.Abs(got-0.2) > 0.001 {
		t.Errorf("capacity %.4f after 300 s, want 0.2 (the run, shorter than ten minutes)", got)
	}
	// A second worker busier: the component's capacity is the highest.
	r := report(t0, t0+600*sec, 0, 1000, 480_000_000)
	r.Worker = WorkerID{"sup-b", 6700}
	a.Observe(r, t0+600*sec)
	st, _ = a.Topology("wc-1", TenMinutes, t0+600*sec)
	if got := st.Components["split"].Capacity; math.Abs(got-0.4) > 0.001 {
		t.Errorf("capacity %.4f, want 0.4, the busier worker's", got)
	}
	if got := st.Components["split"].Windows[TenMinutes].ExecuteLatencyMs(); math.Abs(got-300) > 0.01 {
		t.Errorf("execute latency %.3f ms, want 300", got)
	}
}

func TestWorkersAndStreams(t *testing.T) {
	a := NewAggregator(0)
	a.Observe(report(t0, t0+60*sec, 10, 5, 0), t0+60*sec)
	r := report(t0, t0+60*sec, 20, 7, 0)
	r.Worker = WorkerID{"sup-b", 6701}
	a.Observe(r, t0+60*sec)
	st, _ := a.Topology("wc-1", TenMinutes, t0+60*sec)
	if len(st.Workers) != 4 || st.Workers[0].Worker.Supervisor != "sup-a" || st.Workers[0].Component != "sentences" {
		t.Fatalf("workers %+v, want 4 rows sorted by supervisor, port, component", st.Workers)
	}
	if len(st.Streams) != 2 || st.Streams[0].Emitted != 30 || st.Streams[1].Executed != 12 {
		t.Fatalf("streams %+v, want sentences emitted 30 and split executed 12", st.Streams)
	}
}

// A supervisor that vanishes leaves its counts in the windows until they
// roll out, and in all time after Sweep drops its series.
func TestSweep(t *testing.T) {
	a := NewAggregator(0)
	a.Observe(report(t0, t0+60*sec, 100, 0, 0), t0+60*sec)
	later := t0 + 60*sec + keepMs + sec
	a.Sweep(later, func(string) bool { return true })
	if _, kept := a.Refused(); kept != 0 {
		t.Fatalf("%d series kept after a day without reports, want 0", kept)
	}
	st, ok := a.Topology("wc-1", AllTime, later)
	if !ok || st.Components["sentences"].Windows[AllTime].Emitted != 100 || st.Topology[AllTime].Emitted != 100 {
		t.Fatalf("all time after the sweep: %+v, want 100 emitted", st)
	}
	a.Sweep(later, func(string) bool { return false })
	if _, ok := a.Topology("wc-1", AllTime, later); ok {
		t.Fatal("a topology no longer live still has stats")
	}
}

func TestMaxSeries(t *testing.T) {
	a := NewAggregator(1)
	a.Observe(report(t0, t0+60*sec, 100, 5, 0), t0+60*sec)
	refused, kept := a.Refused()
	if kept != 1 || refused != 1 {
		t.Fatalf("kept %d refused %d, want 1 and 1", kept, refused)
	}
}

func TestParseWindow(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Window
		err  bool
	}{{"", AllTime, false}, {":all-time", AllTime, false}, {"600", TenMinutes, false}, {"10800", ThreeHours, false},
		{"86400", OneDay, false}, {"60", 0, true}, {"all", 0, true}, {"-600", 0, true}} {
		got, err := ParseWindow(tt.in)
		if (err != nil) != tt.err || got != tt.want || (err != nil && !errors.Is(err, ErrUnknownWindow)) {
			t.Errorf("ParseWindow(%q) = %v, %v", tt.in, got, err)
		}
		if err == nil && tt.in != "" && got.String() != tt.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tt.in)
		}
	}
}

// A bolt's input rows are counted per source: rows of one stream from two
// sources are two series, each counted once, and answer as two streams.
func TestStreamsBySource(t *testing.T) {
	bolt := func(source string, acked uint64) StreamCounts {
		return StreamCounts{Key: Key{Component: "count", Source: source, Stream: "default"}, Kind: "bolt", Executors: 1,
			Counts: Counts{Acked: acked, Executed: acked}}
	}
	tests := []struct {
		name    string
		reports [][]StreamCounts
		want    map[string]uint64 // acked all time per source
	}{
		{"two sources", [][]StreamCounts{{bolt("split", 10), bolt("words", 4)}, {bolt("split", 30), bolt("words", 5)}},
			map[string]uint64{"split": 30, "words": 5}},
		{"a source and a row without one", [][]StreamCounts{{bolt("split", 10), bolt("", 7)}, {bolt("split", 12), bolt("", 9)}},
			map[string]uint64{"split": 12, "": 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAggregator(0)
			for i, rows := range tc.reports {
				taken := t0 + int64(i+1)*10*sec
				a.Observe(Report{Topology: "wc-1", Worker: WorkerID{"sup-a", 6700}, StartedMs: t0, TakenMs: taken, Streams: rows}, taken)
			}
			st, ok := a.Topology("wc-1", AllTime, t0+30*sec)
			if !ok {
				t.Fatal("no stats")
			}
			got := map[string]uint64{}
			for _, s := range st.Streams {
				got[s.Source] = s.Acked
			}
			if len(got) != len(tc.want) {
				t.Errorf("streams %+v, want one per source of %v", st.Streams, tc.want)
			}
			var total uint64
			for src, n := range tc.want {
				total += n
				if got[src] != n {
					t.Errorf("acked from %q: %d, want %d", src, got[src], n)
				}
			}
			if c := st.Components["count"].Windows[AllTime].Acked; c != total {
				t.Errorf("component acked %d, want %d", c, total)
			}
		})
	}
}
