package worker

import (
	"cmp"
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

	mu      sync.Mutex
	streams map[string]*Stream
}

// Stream returns the component's counters of stream id (Storm's default
// stream is "default"), made on first use. Keep the result: counting on it
// costs an atomic add and nothing else.
func (c *Component) Stream(id string) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.streams[id]
	if s == nil {
		s = &Stream{spout: c.kind == workerproto.KindSpout}
		c.streams[id] = s
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
}

// component returns name's Component, made of kind on first use; a second
// call with the other kind gets the first one's.
func (r *registry) component(name, kind string, executors int) *Component {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.components == nil {
		r.components = map[string]*Component{}
	}
	c := r.components[name]
	if c == nil {
		c = &Component{name: name, kind: kind, executors: int32(executors), streams: map[string]*Stream{}}
		r.components[name] = c
	}
	return c
}

// snapshot is every stream's counts, sorted by component and stream.
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
		for id, s := range c.streams {
			row := s.counts()
			row.Component, row.Stream, row.Kind, row.Executors = c.name, id, c.kind, c.executors
			rows = append(rows, row)
		}
		c.mu.Unlock()
	}
	slices.SortFunc(rows, func(a, b workerproto.StreamCounts) int {
		return cmp.Or(cmp.Compare(a.Component, b.Component), cmp.Compare(a.Stream, b.Stream))
	})
	return rows
}
