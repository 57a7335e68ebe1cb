package stats

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// DefaultMaxSeries bounds the series an Aggregator keeps (one worker's
// counts on one component's stream); at 72 buckets of 72 bytes each, about
// 260 MB at the bound.
const DefaultMaxSeries = 50_000

// DefaultMaxSeriesPerWorker bounds the series of one worker slot, so a
// worker that names new streams at every report cannot take the room of
// the others: a heartbeat carries at most a few hundred rows per worker.
const DefaultMaxSeriesPerWorker = 1_000

// staleReports is how many of its worker's reports a series may miss
// before it may be evicted to make room for a new one.
const staleReports = 3

// WorkerID is a worker's slot: its supervisor and port.
type WorkerID struct {
	Supervisor string
	Port       int32
}

// Key is a component's stream and, for a bolt's input-side counts, the
// component its tuples came from (Source, "" when its worker did not say):
// Storm's input stats are per source component and stream.
type Key struct {
	Component, Source, Stream string
}

// StreamCounts is what one component's executors in one worker counted
// on one stream, since the worker's run started.
type StreamCounts struct {
	Key
	Kind      string // "spout" or "bolt"
	Executors int32  // the component's executors in the worker
	Counts
}

// Report is what one worker run reported in one heartbeat: cumulative
// counts since StartedMs, taken at TakenMs (Unix milliseconds).
type Report struct {
	Topology  string
	Worker    WorkerID
	Host      string
	StartedMs int64
	TakenMs   int64
	Streams   []StreamCounts
}

// Aggregator keeps every topology's counts in Storm's windows from the
// reports it observes. It is safe for concurrent use.
type Aggregator struct {
	mu           sync.Mutex
	maxSeries    int
	maxPerWorker int
	series       int    // kept now
	refused      uint64 // series not kept for the bound
	topologies   map[string]*topology
}

// NewAggregator returns an Aggregator that keeps at most maxSeries series
// (DefaultMaxSeries if 0), and DefaultMaxSeriesPerWorker of one worker
// slot: at a bound, a stream not seen before takes the place of its
// worker's series that missed its last reports, or is not counted
// (Refused says how many were not).
func NewAggregator(maxSeries int) *Aggregator {
	if maxSeries <= 0 {
		maxSeries = DefaultMaxSeries
	}
	return &Aggregator{maxSeries: maxSeries, maxPerWorker: DefaultMaxSeriesPerWorker, topologies: map[string]*topology{}}
}

type topology struct {
	workers map[WorkerID]*worker
	// retired is the all-time count of series dropped (Sweep), by stream.
	retired map[Key]Counts
	kinds   map[string]string // component to "spout" or "bolt"
}

// worker is what was last seen of a slot's worker, and its series.
type worker struct {
	host           string
	started, taken int64 // of the run last seen
	// since is when the stretch of reports the ten-minute window sees
	// began: a restart within the window does not begin a new one.
	since     int64
	seq       uint64 // reports observed
	run       run    // what was counted of the run last seen (run.go)
	executors map[string]int32
	series    map[Key]*series
}

// series is one worker's counts on one stream: all time, and a ring per
// timed window.
type series struct {
	total   Counts
	rings   [len(ringSpecs)]ring
	lastMs  int64  // its last report
	lastSeq uint64 // its worker's report that last had it
}

// Observe adds what r reports, as seen at now (Unix milliseconds). The
// increase since the worker's last report is spread over the time between
// the two; a run seen for the first time, or a new run (a new StartedMs:
// its counters started again) counts from its start. Within a run each
// count is added once (run.go). A report no newer than the last one of the
// same run changes nothing, nor does one without a run start (StartedMs
// 0 cannot tell a restart from the same run).
func (a *Aggregator) Observe(r Report, now int64) {
	if r.StartedMs <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.topologies[r.Topology]
	if t == nil {
		t = &topology{workers: map[WorkerID]*worker{}, retired: map[Key]Counts{}, kinds: map[string]string{}}
		a.topologies[r.Topology] = t
	}
	taken := min(r.TakenMs, now) // a worker's clock ahead of ours must not fill future buckets
	if taken <= 0 {
		taken = now
	}
	w := t.workers[r.Worker]
	if w == nil {
		w = &worker{series: map[Key]*series{}, executors: map[string]int32{}}
		t.workers[r.Worker] = w
	}
	seen := w.seq > 0
	sameRun := seen && w.started == r.StartedMs
	if sameRun && taken <= w.taken {
		return
	}
	from := r.StartedMs
	if seen {
		from = max(from, w.taken)
	}
	if !sameRun {
		w.run = newRun()
		clear(w.executors) // kept within a run for components a report leaves out
	}
	if !seen || from-w.taken >= int64(TenMinutes)*1000 {
		w.since = from
	}
	w.seq++
	tracked := make([]StreamCounts, 0, len(r.Streams))
	held := make([]*series, 0, len(r.Streams))
	for _, sc := range r.Streams {
		w.executors[sc.Component] = max(w.executors[sc.Component], sc.Executors)
		if sc.Kind != "" {
			t.kinds[sc.Component] = sc.Kind
		}
		if s := a.seriesOf(t, w, sc.Key); s != nil {
			tracked, held = append(tracked, sc), append(held, s)
		}
	}
	for i, d := range w.run.account(tracked) {
		s := held[i]
		s.total = s.total.Add(d)
		for j, spec := range ringSpecs {
			s.rings[j].add(spec, from, taken, d.vec())
		}
		s.lastMs, s.lastSeq = taken, w.seq
	}
	w.host, w.started, w.taken = r.Host, r.StartedMs, taken
}

// seriesOf is w's series for k, made if the bounds allow, after evicting
// w's stale series if they do not; nil if still not.
func (a *Aggregator) seriesOf(t *topology, w *worker, k Key) *series {
	if s := w.series[k]; s != nil {
		return s
	}
	full := func() bool { return a.series >= a.maxSeries || len(w.series) >= a.maxPerWorker }
	if full() {
		a.evictStale(t, w)
	}
	if full() {
		a.refused++
		return nil
	}
	a.series++
	s := &series{}
	w.series[k] = s
	return s
}

// evictStale drops w's series that missed its last staleReports reports.
func (a *Aggregator) evictStale(t *topology, w *worker) {
	for k, s := range w.series {
		if w.seq-s.lastSeq >= staleReports {
			a.retire(t, w, k, s)
		}
	}
}

// retire drops w's series s of k, keeping its all-time counts in t's.
func (a *Aggregator) retire(t *topology, w *worker, k Key, s *series) {
	t.retired[k] = t.retired[k].Add(s.total)
	w.run.forget(k)
	delete(w.series, k)
	a.series--
}

// Refused is how many series were not kept because of the bound, and
// Series how many are kept.
func (a *Aggregator) Refused() (refused uint64, kept int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused, a.series
}

// Sweep forgets the topologies live does not name, and drops the series
// that reported nothing for longer than the longest timed window, keeping
// their all-time counts in their topology's.
func (a *Aggregator) Sweep(now int64, live func(topology string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, t := range a.topologies {
		if !live(id) {
			for _, w := range t.workers {
				a.series -= len(w.series)
			}
			delete(a.topologies, id)
			continue
		}
		for wid, w := range t.workers {
			for k, s := range w.series {
				if now-s.lastMs > keepMs {
					a.retire(t, w, k, s)
				}
			}
			if len(w.series) == 0 && now-w.taken > keepMs {
				delete(t.workers, wid)
			}
		}
	}
}

// Topologies lists the topologies with counts, sorted.
func (a *Aggregator) Topologies() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.topologies))
	for id := range a.topologies {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Totals are counts in a window, and whether any report fell in it: a
// window without one has no data, which is not zero.
type Totals struct {
	Counts
	Reported bool
}

func (t Totals) plus(c Counts, reported bool) Totals {
	return Totals{Counts: t.Counts.Add(c), Reported: t.Reported || reported}
}

// TopologyStats is a topology's counts.
type TopologyStats struct {
	// Window is the window of Streams and Workers.
	Window Window
	// Topology is Storm's topologyStats, per window: emitted and
	// transferred summed over its components, acked, failed and the
	// complete latency of its spouts; system components and streams
	// (ids starting "__") left out, as Storm does by default.
	Topology map[Window]Totals
	// Components are each component's counts per window, its capacity
	// and its executors that report.
	Components map[string]*ComponentStats
	// Streams are the counts per component, stream and source in Window,
	// sorted.
	Streams []StreamStats
	// Workers are the counts per worker and component in Window, sorted
	// by supervisor, port and component.
	Workers []WorkerStats
}

// ComponentStats are one component's counts.
type ComponentStats struct {
	Kind    string // "spout" or "bolt"; "" if no report said
	Windows map[Window]Totals
	// Capacity is Storm's: the fraction of the last ten minutes (or of
	// the worker's run, if shorter) its executors spent executing, the
	// highest of its workers'.
	Capacity float64
}

// StreamStats are a component's counts on one stream from one source.
type StreamStats struct {
	Key
	Kind string
	Totals
}

// WorkerStats are a component's counts in one worker, and its capacity
// there (Storm's per executor: a worker reports per component, so each
// of its executors is taken to have done an even share).
type WorkerStats struct {
	Worker    WorkerID
	Host      string
	Component string
	Executors int32
	Totals
	Capacity float64
}

// Topology returns topology id's counts at now, with streams and workers
// in window w; false if no worker of it ever reported.
func (a *Aggregator) Topology(id string, w Window, now int64) (*TopologyStats, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.topologies[id]
	if t == nil || len(t.workers) == 0 && len(t.retired) == 0 {
		return nil, false
	}
	out := &TopologyStats{Window: w, Topology: map[Window]Totals{}, Components: map[string]*ComponentStats{}}
	component := func(c string) *ComponentStats {
		cs := out.Components[c]
		if cs == nil {
			cs = &ComponentStats{Kind: t.kinds[c], Windows: map[Window]Totals{}}
			out.Components[c] = cs
		}
		return cs
	}
	// One pass over the series: each window's sum of each is taken once.
	perWindow := map[Window]map[Key]Totals{} // by stream
	for _, win := range Windows {
		perWindow[win] = map[Key]Totals{}
	}
	for k, c := range t.retired {
		cs := component(k.Component)
		cs.Windows[AllTime] = cs.Windows[AllTime].plus(c, true)
		perWindow[AllTime][k] = perWindow[AllTime][k].plus(c, true)
	}
	for wid, wk := range t.workers {
		byComponent := map[string]Totals{}
		busy10 := map[string]uint64{} // execute latency in the last ten minutes
		for k, s := range wk.series {
			cs := component(k.Component)
			for _, win := range Windows {
				in := s.windowTotals(win, now)
				cs.Windows[win] = cs.Windows[win].plus(in.Counts, in.Reported)
				perWindow[win][k] = perWindow[win][k].plus(in.Counts, in.Reported)
				if win == TenMinutes {
					busy10[k.Component] += in.ExecuteLatencyUs
				}
				if win == w {
					byComponent[k.Component] = byComponent[k.Component].plus(in.Counts, in.Reported)
				}
			}
		}
		for c, tot := range byComponent {
			ws := WorkerStats{Worker: wid, Host: wk.host, Component: c, Executors: wk.executors[c], Totals: tot,
				Capacity: capacity(busy10[c], wk.executors[c], wk.since, now)}
			out.Workers = append(out.Workers, ws)
			cs := component(c)
			cs.Capacity = max(cs.Capacity, ws.Capacity)
		}
	}
	streams := perWindow[w]
	for k, tot := range streams {
		out.Streams = append(out.Streams, StreamStats{Key: k, Kind: t.kinds[k.Component], Totals: tot})
	}
	slices.SortFunc(out.Streams, func(x, y StreamStats) int {
		return cmp.Or(cmp.Compare(x.Component, y.Component), cmp.Compare(x.Stream, y.Stream), cmp.Compare(x.Source, y.Source))
	})
	slices.SortFunc(out.Workers, func(x, y WorkerStats) int {
		return cmp.Or(cmp.Compare(x.Worker.Supervisor, y.Worker.Supervisor), cmp.Compare(x.Worker.Port, y.Worker.Port),
			cmp.Compare(x.Component, y.Component))
	})
	out.Topology = topologyTotals(t, perWindow)
	return out, true
}

// windowTotals is s's counts in window w at now.
func (s *series) windowTotals(w Window, now int64) Totals {
	if w == AllTime {
		return Totals{Counts: s.total, Reported: true}
	}
	i := ringIndex(w)
	if i < 0 {
		return Totals{}
	}
	v, rep := s.rings[i].sum(ringSpecs[i], now)
	return Totals{Counts: fromVec(v), Reported: rep}
}

// topologyTotals is Storm's topologyStats from the streams' counts.
func topologyTotals(t *topology, byWindow map[Window]map[Key]Totals) map[Window]Totals {
	out := map[Window]Totals{}
	for w, streams := range byWindow {
		var tot Totals
		for k, in := range streams {
			if isSystem(k.Component) || isSystem(k.Stream) {
				continue
			}
			c := Counts{Emitted: in.Emitted, Transferred: in.Transferred}
			if t.kinds[k.Component] == "spout" {
				c.Acked, c.Failed, c.CompleteLatencyUs = in.Acked, in.Failed, in.CompleteLatencyUs
			}
			tot = tot.plus(c, in.Reported)
		}
		out[w] = tot
	}
	return out
}

// isSystem is whether id names a system component or stream, as Storm's
// do ("__acker", "__ack_init").
func isSystem(id string) bool { return strings.HasPrefix(id, "__") }

// capacity is Storm's capacity of an executor: the time spent executing
// over the last ten minutes, or over the time since the reports began
// (since) if it is shorter, per executor.
func capacity(busyUs uint64, executors int32, since, now int64) float64 {
	windowMs := int64(TenMinutes) * 1000
	if since > 0 && now-since < windowMs {
		windowMs = now - since
	}
	if windowMs <= 0 {
		return 0
	}
	return float64(busyUs) / float64(max(executors, 1)) / (float64(windowMs) * 1000)
}
