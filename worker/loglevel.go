package worker

import (
	"context"
	"log/slog"
	"math"
	"sync/atomic"

	"github.com/nimbusha/nimbus/workerproto"
)

// LoggerKey is the attribute that names a logger: Worker.Logger sets it,
// and a handler from Worker.Handler takes the level of the logger a
// record's "logger" attribute (added with slog.Logger.With) names.
const LoggerKey = "logger"

// LevelTrace is slog's place for log4j's TRACE, below slog.LevelDebug.
const LevelTrace = slog.LevelDebug - 4

// SlogLevel is the slog level of a Storm level: TRACE is LevelTrace, DEBUG
// to ERROR are slog's own, FATAL is above ERROR, ALL lets everything
// through and OFF nothing.
func SlogLevel(l workerproto.Level) slog.Level {
	switch l {
	case workerproto.LevelAll:
		return math.MinInt32
	case workerproto.LevelTrace:
		return LevelTrace
	case workerproto.LevelDebug:
		return slog.LevelDebug
	case workerproto.LevelWarn:
		return slog.LevelWarn
	case workerproto.LevelError:
		return slog.LevelError
	case workerproto.LevelFatal:
		return slog.LevelError + 4
	case workerproto.LevelOff:
		return math.MaxInt32
	default:
		return slog.LevelInfo
	}
}

// levelTable is the worker's current log levels, swapped whole when the
// log-level file changes.
type levelTable struct {
	fallback slog.Level // loggers the file does not name, nor their parents, nor ROOT
	levels   atomic.Pointer[workerproto.LogLevels]
}

func (t *levelTable) set(l workerproto.LogLevels) { t.levels.Store(&l) }

// level is logger name's level now.
func (t *levelTable) level(name string) slog.Level {
	if l := t.levels.Load(); l != nil {
		if lv, ok := l.Effective(name); ok {
			return SlogLevel(lv)
		}
	}
	return t.fallback
}

// levelHandler passes on the records of its logger that its level allows.
type levelHandler struct {
	base  slog.Handler
	name  string // the logger; "" is the root logger
	table *levelTable
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.table.level(h.name) && h.base.Enabled(ctx, l)
}

func (h *levelHandler) Handle(ctx context.Context, r slog.Record) error { return h.base.Handle(ctx, r) }

func (h *levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	name := h.name
	for _, a := range attrs {
		if a.Key == LoggerKey && a.Value.Kind() == slog.KindString {
			name = a.Value.String()
		}
	}
	return &levelHandler{base: h.base.WithAttrs(attrs), name: name, table: h.table}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{base: h.base.WithGroup(name), name: h.name, table: h.table}
}
