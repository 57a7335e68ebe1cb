package nimbus

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// logRecord is one line a nimbus logged, as a test looks at it.
type logRecord struct {
	Nimbus  string // which nimbus of the test logged it
	Time    time.Time
	Level   slog.Level
	Message string
	Attrs   map[string]string // with those its logger was given (component, epoch)
}

// logRecords keeps what the nimbuses of a test log, for assertions. Each
// nimbus logs through a handler of its own (Logger), so every line says
// which one wrote it. Lines at WARN and above also go to stderr, as
// startWith's logger sends them, so a failed test shows them.
type logRecords struct {
	mu   sync.Mutex
	recs []logRecord
}

// Logger returns a logger for the nimbus called name.
func (r *logRecords) Logger(name string) *slog.Logger {
	stderr := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	return slog.New(&recordingHandler{sink: r, nimbus: name, stderr: stderr.WithAttrs([]slog.Attr{slog.String("nimbus", name)})})
}

// Find returns, in the order logged, the lines match accepts.
func (r *logRecords) Find(match func(logRecord) bool) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, rec := range r.recs {
		if match(rec) {
			out = append(out, rec)
		}
	}
	return out
}

func (r *logRecords) add(rec logRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

// recordingHandler is one nimbus's slog.Handler into a logRecords.
type recordingHandler struct {
	sink   *logRecords
	nimbus string
	attrs  []slog.Attr // from WithAttrs
	stderr slog.Handler
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clip(h.attrs), attrs...)
	c.stderr = h.stderr.WithAttrs(attrs)
	return &c
}

// WithGroup keeps the group's attributes unqualified: nothing the tests
// look at is grouped.
func (h *recordingHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.stderr = h.stderr.WithGroup(name)
	return &c
}

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := logRecord{Nimbus: h.nimbus, Time: r.Time, Level: r.Level, Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.sink.add(rec)
	if h.stderr.Enabled(ctx, r.Level) {
		return h.stderr.Handle(ctx, r)
	}
	return nil
}
