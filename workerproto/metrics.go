package workerproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MetricsVersion is the metrics file's format, its "version" field. A
// reader refuses a file of another version whole.
const MetricsVersion = 1

// MaxMetricsBytes is the largest metrics file a supervisor reads; a larger
// one is refused whole and the last good one stands.
const MaxMetricsBytes = 256 << 10

// MaxNameBytes bounds a component, stream or logger name in the protocol's
// files.
const MaxNameBytes = 256

// The kinds of component.
const (
	KindSpout = "spout"
	KindBolt  = "bolt"
)

// ErrBadMetrics is a metrics file that is not a valid one of this version.
var ErrBadMetrics = errors.New("workerproto: bad metrics file")

// Metrics is the content of a worker's metrics file: what its run counted
// since it started, per component and stream. Every counter is cumulative,
// so a reader that misses a version loses nothing.
type Metrics struct {
	Version       int            `json:"version"`         // MetricsVersion
	TakenUnixMs   int64          `json:"taken_unix_ms"`   // when the worker wrote it
	StartedUnixMs int64          `json:"started_unix_ms"` // when the worker's run started; required, not 0
	Streams       []StreamCounts `json:"streams"`
}

// StreamCounts is what one component's executors in the worker counted on
// one stream, in Storm's words. Emitted and transferred count tuples
// emitted on the stream (transferred: sent to a consumer); acked, failed
// and executed count tuples of that stream as its component received or
// completed them. Latencies are sums in microseconds: complete latency
// over acked tuples for a spout, process latency over acked tuples for a
// bolt, execute latency over executed tuples. Absent counters are 0.
// Source, optional, is the component a bolt received the stream's tuples
// from (Storm's input stats are per source component and stream): a bolt
// that counts its input per source writes one row per (source, stream),
// its emitted and transferred counts in a row without a source.
type StreamCounts struct {
	Component         string `json:"component"`
	Source            string `json:"source,omitempty"`
	Stream            string `json:"stream"`
	Kind              string `json:"kind"` // KindSpout or KindBolt
	Executors         int32  `json:"executors,omitempty"`
	Emitted           uint64 `json:"emitted,omitempty"`
	Transferred       uint64 `json:"transferred,omitempty"`
	Acked             uint64 `json:"acked,omitempty"`
	Failed            uint64 `json:"failed,omitempty"`
	Executed          uint64 `json:"executed,omitempty"`
	CompleteLatencyUs uint64 `json:"complete_latency_us,omitempty"`
	ProcessLatencyUs  uint64 `json:"process_latency_us,omitempty"`
	ExecuteLatencyUs  uint64 `json:"execute_latency_us,omitempty"`
}

// Traffic is the row's tuples of every kind: what ranks rows when some
// must be left out.
func (s StreamCounts) Traffic() uint64 {
	return s.Emitted + s.Transferred + s.Acked + s.Failed + s.Executed
}

// EncodeMetrics is the file's content for m, version set. It refuses what
// ParseMetrics would.
func EncodeMetrics(m Metrics) ([]byte, error) {
	m.Version = MetricsVersion
	if err := m.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMetricsBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadMetrics, len(b), MaxMetricsBytes)
	}
	return append(b, '\n'), nil
}

// ParseMetrics reads a metrics file's content. Unknown fields are ignored,
// so a later version may add some; any error names the field at fault and
// wraps ErrBadMetrics.
func ParseMetrics(b []byte) (Metrics, error) {
	if len(b) > MaxMetricsBytes {
		return Metrics{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadMetrics, len(b), MaxMetricsBytes)
	}
	var m Metrics
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return Metrics{}, fmt.Errorf("%w: %v", ErrBadMetrics, err)
	}
	if dec.More() {
		return Metrics{}, fmt.Errorf("%w: more than one JSON value", ErrBadMetrics)
	}
	if err := m.validate(); err != nil {
		return Metrics{}, err
	}
	return m, nil
}

// validate checks what a reader relies on: the version, times that are not
// negative, a run start, and rows with names, a kind, and no (component,
// source, stream) twice.
func (m Metrics) validate() error {
	if m.Version != MetricsVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrBadMetrics, m.Version, MetricsVersion)
	}
	if m.TakenUnixMs < 0 || m.StartedUnixMs < 0 {
		return fmt.Errorf("%w: taken_unix_ms and started_unix_ms must not be negative", ErrBadMetrics)
	}
	if m.StartedUnixMs == 0 {
		// Without it a restart could not be told from the same run.
		return fmt.Errorf("%w: started_unix_ms 0, want the run's start (Unix milliseconds)", ErrBadMetrics)
	}
	type key struct{ component, source, stream string }
	seen := make(map[key]bool, len(m.Streams))
	for i, s := range m.Streams {
		field := fmt.Sprintf("streams[%d]", i)
		if err := CheckName(s.Component); err != nil {
			return fmt.Errorf("%w: %s.component: %v", ErrBadMetrics, field, err)
		}
		if err := CheckName(s.Stream); err != nil {
			return fmt.Errorf("%w: %s.stream: %v", ErrBadMetrics, field, err)
		}
		if s.Source != "" {
			if err := CheckName(s.Source); err != nil {
				return fmt.Errorf("%w: %s.source: %v", ErrBadMetrics, field, err)
			}
		}
		if s.Kind != KindSpout && s.Kind != KindBolt {
			return fmt.Errorf("%w: %s.kind %q, want %q or %q", ErrBadMetrics, field, truncate(s.Kind, 32), KindSpout, KindBolt)
		}
		if s.Executors < 0 {
			return fmt.Errorf("%w: %s.executors %d is negative", ErrBadMetrics, field, s.Executors)
		}
		k := key{s.Component, s.Source, s.Stream}
		if seen[k] {
			return fmt.Errorf("%w: %s: component %q source %q stream %q appears twice", ErrBadMetrics, field, s.Component, s.Source, s.Stream)
		}
		seen[k] = true
	}
	return nil
}

// CheckName accepts a non-empty name of at most MaxNameBytes of UTF-8
// without control characters.
func CheckName(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > MaxNameBytes:
		return fmt.Errorf("%d bytes, more than %d", len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return errors.New("not UTF-8")
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("%q has a control character", s)
		}
	}
	return nil
}
