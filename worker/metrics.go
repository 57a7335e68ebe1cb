package worker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nimbusha/nimbus/workerproto"
)

// Component counts what one spout's or bolt's executors in this worker do,
// per stream. Get one with Worker.Spout or Worker.Bolt; it is safe for
// concurrent use.
type Component struct {
	name, kind string
	executors  int32
	warn       func(msg string, args ...any)

	mu      sync.Mutex
	streams map[streamKey]*Stream
	refused map[streamKey]*Stream // names the protocol refuses: not reported
}

// streamKey names a row: the stream and, for a bolt's input, the
// component its tuples came from ("" for none).
type streamKey struct{ source, stream string }

// Stream returns the component's counters of stream id (Storm's default
// stream is "default"), made on first use. Keep the result: counting on it
// costs an atomic add and nothing else. An id the worker protocol refuses
// (empty, over workerproto.MaxNameBytes, not UTF-8, with a control
// character), or any stream of such a component, counts but is not
// reported, and is named once in the worker's log.
func (c *Component) Stream(id string) *Stream { return c.stream(streamKey{stream: id}) }

// Input returns the counters of the tuples a bolt receives on stream id
// from component source, made on first use: Storm's input stats (acked,
// failed, executed and their latencies) are per source component and
// stream, so a bolt counts its input here and its output (Emit, Transfer)
// on Stream. A source or id the worker protocol refuses counts but is not
// reported, as with Stream.
func (c *Component) Input(source, id string) *Stream {
	return c.stream(streamKey{source: source, stream: id})
}

func (c *Component) stream(k streamKey) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.streams[k]
	if s == nil {
		if s = c.refused[k]; s != nil {
			return s
		}
		s = &Stream{spout: c.kind == workerproto.KindSpout}
		err := workerproto.CheckName(k.stream)
		if err == nil && k.source != "" {
			if err = workerproto.CheckName(k.source); err != nil {
				err = fmt.Errorf("source: %w", err)
			}
		}
		if err != nil {
			c.warn("a stream id the worker protocol refuses: its counts are not reported",
				"component", c.name, "source", k.source, "stream", k.stream, "err", err)
			if c.refused == nil {
				c.refused = map[streamKey]*Stream{}
			}
			c.refused[k] = s
			return s
		}
		c.streams[k] = s
	}
	return s
}

// Stream is one component's counters of one stream, Storm's: emitted and
// transferred count the tuples the component emits on the stream; acked,
// failed and executed the stream's tuples it completes or receives.
// Latencies add up to microsecond sums that readers divide by the counts.
// Every method is safe for concurrent use and allocation-free.
type Stream struct {
	spout bool

	emitted, transferred, acked, failed, executed atomic.Uint64
	completeUs, processUs, executeUs              atomic.Uint64
}

// Emit counts n tuples emitted on the stream.
func (s *Stream) Emit(n uint64) { s.emitted.Add(n) }

// Transfer counts n tuples sent on to consumers.
func (s *Stream) Transfer(n uint64) { s.transferred.Add(n) }

// Ack counts one acked tuple and its latency: for a spout the complete
// latency (emitted to fully processed), for a bolt the process latency
// (received to acked).
func (s *Stream) Ack(latency time.Duration) {
	s.acked.Add(1)
	if s.spout {
		s.completeUs.Add(micros(latency))
	} else {
		s.processUs.Add(micros(latency))
	}
}

// Fail counts one failed tuple.
func (s *Stream) Fail() { s.failed.Add(1) }

// Execute counts one tuple executed and how long execute took.
func (s *Stream) Execute(latency time.Duration) {
	s.executed.Add(1)
	s.executeUs.Add(micros(latency))
}

func micros(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d.Microseconds())
}

// counts reads the stream's counters. Each is read atomically; a row read
// while others count may mix a moment's values, which cumulative counters
// allow.
func (s *Stream) counts() workerproto.StreamCounts {
	return workerproto.StreamCounts{
		Emitted: s.emitted.Load(), Transferred: s.transferred.Load(), Acked: s.acked.Load(),
		Failed: s.failed.Load(), Executed: s.executed.Load(),
		CompleteLatencyUs: s.completeUs.Load(), ProcessLatencyUs: s.processUs.Load(), ExecuteLatencyUs: s.executeUs.Load(),
	}
}

// registry holds the worker's components.
type registry struct {
	mu         sync.Mutex
	components map[string]*Component
	refused    map[string]*Component         // names the protocol refuses: not reported
	warn       func(msg string, args ...any) // the worker's log
}

// component returns name's Component, made of kind on first use; a second
// call with the other kind gets the first one's. A name the worker
// protocol refuses gets a Component that is not reported, named once in
// the log.
func (r *registry) component(name, kind string, executors int) *Component {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.components == nil {
		r.components = map[string]*Component{}
	}
	c := r.components[name]
	if c == nil {
		if c = r.refused[name]; c != nil {
			return c
		}
		c = &Component{name: name, kind: kind, executors: int32(executors), streams: map[streamKey]*Stream{}, warn: r.warn}
		if err := workerproto.CheckName(name); err != nil {
			r.warn("a component name the worker protocol refuses: its counts are not reported", "component", name, "err", err)
			c.warn = func(string, ...any) {} // none of its streams is reported
			if r.refused == nil {
				r.refused = map[string]*Component{}
			}
			r.refused[name] = c
			return c
		}
		r.components[name] = c
	}
	return c
}

// snapshot is every stream's counts, sorted by component, stream and
// source.
func (r *registry) snapshot() []workerproto.StreamCounts {
	r.mu.Lock()
	cs := make([]*Component, 0, len(r.components))
	for _, c := range r.components {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	var rows []workerproto.StreamCounts
	for _, c := range cs {
		c.mu.Lock()
		for k, s := range c.streams {
			row := s.counts()
			row.Component, row.Source, row.Stream, row.Kind, row.Executors = c.name, k.source, k.stream, c.kind, c.executors
			rows = append(rows, row)
		}
		c.mu.Unlock()
	}
	slices.SortFunc(rows, func(a, b workerproto.StreamCounts) int {
		return cmp.Or(cmp.Compare(a.Component, b.Component), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Source, b.Source))
	})
	return rows
}

// fitRows leaves out of m the quietest rows (by Traffic, then name) until
// its file fits limit bytes, so that too many streams cost the quietest,
// not the whole file; it returns how many it left out.
func fitRows(m workerproto.Metrics, limit int) (workerproto.Metrics, int) {
	b, err := json.Marshal(m)
	if err != nil || len(b) < limit {
		return m, 0
	}
	sizes := make(map[*workerproto.StreamCounts]int, len(m.Streams))
	size := len(b)
	byTraffic := make([]*workerproto.StreamCounts, len(m.Streams))
	for i := range m.Streams {
		r := &m.Streams[i]
		rb, _ := json.Marshal(r)
		sizes[r] = len(rb) + 1 // and its comma
		byTraffic[i] = r
	}
	slices.SortFunc(byTraffic, func(a, b *workerproto.StreamCounts) int {
		return cmp.Or(cmp.Compare(a.Traffic(), b.Traffic()), cmp.Compare(a.Component, b.Component), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Source, b.Source))
	})
	left := map[*workerproto.StreamCounts]bool{}
	for _, r := range byTraffic {
		if size < limit { // the file ends with a newline
			break
		}
		left[r] = true
		size -= sizes[r]
	}
	kept := make([]workerproto.StreamCounts, 0, len(m.Streams)-len(left))
	for i := range m.Streams {
		if !left[&m.Streams[i]] {
			kept = append(kept, m.Streams[i])
		}
	}
	m.Streams = kept
	return m, len(left)
}
