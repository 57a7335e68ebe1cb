package supervisor

import (
	"cmp"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/stats"
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

// maxStreamNames bounds the distinct stream names one worker run's
// metrics carry under their own names: the heartbeat is world-readable,
// and the names are the worker's text. Later names are folded into their
// component's "" row.
const maxStreamNames = 128

// fitFunc cuts one worker's metrics to a limit (fitMetrics).
type fitFunc func(m *clusterv1.WorkerMetrics, limit int) *clusterv1.WorkerMetrics

// capMetrics keeps the metrics of workers within total bytes: when they
// are over, each worker gets an equal share, a worker that needs less
// leaving the rest to the others, and a worker over its share is cut by
// fits[i] (fitMetrics without a carriage when fits is nil).
func capMetrics(workers []*clusterv1.WorkerState, fits []fitFunc, total int) {
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
			fit := func(m *clusterv1.WorkerMetrics, limit int) *clusterv1.WorkerMetrics { return fitMetrics(m, limit, nil) }
			if fits != nil && fits[i] != nil {
				fit = fits[i]
			}
			workers[i].Metrics = fit(workers[i].GetMetrics(), share)
			share = proto.Size(workers[i].GetMetrics())
		}
		left -= share
	}
}

// carriage is what one worker run's metrics carry under their own names:
// the first maxStreamNames stream names, less those folded. Within a run
// it only shrinks, so a stream is folded alike in every heartbeat (the
// nimbus adds each count once either way, but its per-stream windows
// stay whole).
type carriage struct {
	run    int64 // the run's started_unix_ms
	named  map[rowKey]bool
	folded map[rowKey]bool // for the rest of the run
}

// rowKey names a row: a bolt's input rows of one stream differ by source.
type rowKey struct{ component, source, stream string }

func keyOf(r *clusterv1.StreamStats) rowKey {
	return rowKey{r.GetComponent(), r.GetSource(), r.GetStream()}
}

// forRun makes c the carriage of run, empty if it was another run's.
func (c *carriage) forRun(run int64) {
	if c.named == nil || c.run != run {
		*c = carriage{run: run, named: map[rowKey]bool{}, folded: map[rowKey]bool{}}
	}
}

// fitMetrics returns m cut to at most limit encoded bytes, m itself when it
// fits and c (which may be nil) folds none of it. With c, the streams c
// folded are folded, and names beyond c's first maxStreamNames too. Then,
// while over the limit: streams, by name, the last first, each folded into
// its component's stream "" row (its counts kept there, its source not:
// the row has none) and, with c, for
// the rest of the run (foldStreams); then whole components, by name, the
// last first (dropComponents). Each stream not carried under its own name
// counts in dropped_streams. A limit too small for any row leaves no
// streams.
func fitMetrics(m *clusterv1.WorkerMetrics, limit int, c *carriage) *clusterv1.WorkerMetrics {
	if m == nil {
		return nil
	}
	if c != nil {
		c.forRun(m.GetStartedUnixMs())
	}
	if proto.Size(m) <= limit && !c.foldsAny(m) {
		return m
	}
	out := cloneMetrics(m)
	set := newRowSet(out)
	if c != nil {
		set.foldCarried(c)
	}
	set.foldStreams(limit, c)
	set.dropComponents(limit)
	out.Streams = set.rows()
	out.DroppedStreams += int32(namedRows(m) - namedRows(out))
	return out
}

// foldsAny is whether c folds any of m's streams or has no room for one.
func (c *carriage) foldsAny(m *clusterv1.WorkerMetrics) bool {
	if c == nil {
		return false
	}
	names := len(c.named)
	for _, r := range m.GetStreams() {
		k := keyOf(r)
		if r.GetStream() == "" || c.named[k] {
			continue
		}
		if c.folded[k] || names >= maxStreamNames {
			return true
		}
		names++
	}
	return false
}

func namedRows(m *clusterv1.WorkerMetrics) int {
	n := 0
	for _, r := range m.GetStreams() {
		if r.GetStream() != "" {
			n++
		}
	}
	return n
}

// rowSet is a worker's rows being cut to size: the named ones, by name,
// and each component's "" row, with their encoded size kept as rows go.
type rowSet struct {
	named  []*clusterv1.StreamStats // by component and stream
	gone   map[*clusterv1.StreamStats]bool
	pooled map[string]*clusterv1.StreamStats // component to its "" row
	size   int
}

func newRowSet(m *clusterv1.WorkerMetrics) *rowSet {
	s := &rowSet{gone: map[*clusterv1.StreamStats]bool{}, pooled: map[string]*clusterv1.StreamStats{}}
	// The header's size, with room for dropped_streams at its widest.
	s.size = proto.Size(&clusterv1.WorkerMetrics{TakenUnixMs: m.GetTakenUnixMs(), StartedUnixMs: m.GetStartedUnixMs()}) + 1 + protowire.SizeVarint(1<<32)
	for _, r := range m.GetStreams() {
		s.size += rowSize(r)
		if r.GetStream() == "" {
			s.pooled[r.GetComponent()] = r
		} else {
			s.named = append(s.named, r)
		}
	}
	slices.SortFunc(s.named, compareRows)
	return s
}

func compareRows(a, b *clusterv1.StreamStats) int {
	return cmp.Or(cmp.Compare(a.GetComponent(), b.GetComponent()), cmp.Compare(a.GetStream(), b.GetStream()),
		cmp.Compare(a.GetSource(), b.GetSource()))
}

// fold moves named row r into its component's "" row.
func (s *rowSet) fold(r *clusterv1.StreamStats) {
	s.size -= rowSize(r)
	s.gone[r] = true
	into := s.pooled[r.GetComponent()]
	if into == nil {
		into = &clusterv1.StreamStats{Component: r.GetComponent(), Kind: r.GetKind()}
		s.pooled[r.GetComponent()] = into
	} else {
		s.size -= rowSize(into)
	}
	addCounts(into, r)
	s.size += rowSize(into)
}

// foldCarried folds the streams c folds, and admits the names c has room
// for, in name order; the rest are folded for the run.
func (s *rowSet) foldCarried(c *carriage) {
	for _, r := range s.named {
		k := keyOf(r)
		switch {
		case c.named[k]:
		case !c.folded[k] && len(c.named) < maxStreamNames:
			c.named[k] = true
		default:
			c.folded[k] = true
			s.fold(r)
		}
	}
}

// foldStreams folds streams, by name, the last first, until the rows fit
// limit; with c, for the rest of the run.
func (s *rowSet) foldStreams(limit int, c *carriage) {
	for i := len(s.named) - 1; i >= 0 && s.size > limit; i-- {
		r := s.named[i]
		if s.gone[r] {
			continue
		}
		s.fold(r)
		if c != nil {
			delete(c.named, keyOf(r))
			c.folded[keyOf(r)] = true
		}
	}
}

// dropComponents leaves whole components out, by name, the last first,
// until the rows fit limit. It is for this heartbeat only: the nimbus keeps
// a component's last counts while it is missing.
func (s *rowSet) dropComponents(limit int) {
	if s.size <= limit {
		return
	}
	componentSize := map[string]int{}
	for _, r := range s.named {
		if !s.gone[r] {
			componentSize[r.GetComponent()] += rowSize(r)
		}
	}
	for c, r := range s.pooled {
		componentSize[c] += rowSize(r)
	}
	components := slices.Sorted(maps.Keys(componentSize))
	for i := len(components) - 1; i >= 0 && s.size > limit; i-- {
		c := components[i]
		for _, r := range s.named {
			if r.GetComponent() == c {
				s.gone[r] = true
			}
		}
		delete(s.pooled, c)
		s.size -= componentSize[c]
	}
}

// rows are the rows left, by component and stream.
func (s *rowSet) rows() []*clusterv1.StreamStats {
	out := make([]*clusterv1.StreamStats, 0, len(s.named)+len(s.pooled))
	for _, r := range s.named {
		if !s.gone[r] {
			out = append(out, r)
		}
	}
	for _, r := range s.pooled {
		out = append(out, r)
	}
	slices.SortFunc(out, compareRows)
	return out
}

// rowSize is what a row adds to its WorkerMetrics: tag, length, content.
func rowSize(r *clusterv1.StreamStats) int {
	n := proto.Size(r)
	return 1 + protowire.SizeVarint(uint64(n)) + n
}

// addCounts adds r's counts to into's.
func addCounts(into, r *clusterv1.StreamStats) {
	stats.SetCounts(into, stats.CountsOf(into).Add(stats.CountsOf(r)))
	into.Executors = max(into.GetExecutors(), r.GetExecutors())
}

func cloneMetrics(m *clusterv1.WorkerMetrics) *clusterv1.WorkerMetrics {
	return proto.Clone(m).(*clusterv1.WorkerMetrics)
}
