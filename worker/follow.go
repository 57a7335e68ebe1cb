package worker

import (
	"context"
	"os"
	"time"

	"github.com/nimbusha/nimbus/workerproto"
)

// followSignals reads the status, log-level and blobs files again on each
// SIGUSR1 until ctx ends.
func (w *Worker) followSignals(ctx context.Context, usr1 <-chan os.Signal) {
	for {
		select {
		case <-usr1:
			w.follow()
		case <-ctx.Done():
			return
		}
	}
}

// follow takes up what the status and log-level files say now. A file it
// cannot read or parse is logged and the last value stands (a first
// status that cannot be read counts as Active).
func (w *Worker) follow() {
	if st, err := w.proto.Status(); err != nil {
		w.log.Warn("cannot read the status file; the last status stands", "err", err)
	} else {
		w.setStatus(st)
	}
	if levels, err := w.proto.LogLevels(); err != nil {
		w.log.Warn("cannot read the log-level file; the last levels stand", "err", err)
	} else {
		w.levels.set(levels)
	}
	w.followBlobs()
}

// setStatus takes up st: spouts follow it, StatusChanges and OnStatus
// hear of it.
func (w *Worker) setStatus(st workerproto.Status) {
	w.mu.Lock()
	if w.announced && st == w.status {
		w.mu.Unlock()
		return
	}
	w.status, w.announced = st, true
	close(w.changed)
	w.changed = make(chan struct{})
	select { // keep only the latest
	case <-w.updates:
	default:
	}
	w.updates <- st
	w.mu.Unlock()
	if w.cfg.OnStatus != nil {
		w.cfg.OnStatus(st)
	}
}

// setStopping stops the spouts for good.
func (w *Worker) setStopping() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return
	}
	w.stopping = true
	close(w.changed)
	w.changed = make(chan struct{})
}

// writeMetricsEvery writes the metrics file every MetricsInterval until
// ctx ends.
func (w *Worker) writeMetricsEvery(ctx context.Context) {
	if w.proto.MetricsFile == "" {
		return
	}
	tick := time.NewTicker(w.cfg.MetricsInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.flushMetrics()
		case <-ctx.Done():
			return
		}
	}
}

// flushMetrics writes the counters now. A failure is logged once per
// distinct error: the next write may succeed.
func (w *Worker) flushMetrics() {
	if w.proto.MetricsFile == "" {
		return
	}
	m, left := fitRows(workerproto.Metrics{
		TakenUnixMs: time.Now().UnixMilli(), StartedUnixMs: w.started.UnixMilli(), Streams: w.metrics.snapshot(),
	}, workerproto.MaxMetricsBytes)
	err := w.proto.WriteMetrics(m)
	w.mu.Lock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if left > 0 && !w.leftOut {
		w.log.Warn("more streams than a metrics file holds: left out the quietest", "left_out", left, "limit_bytes", workerproto.MaxMetricsBytes)
	}
	w.leftOut = left > 0
	repeat := msg == w.lastWriteErr
	w.lastWriteErr = msg
	w.mu.Unlock()
	if err != nil && !repeat {
		w.log.Warn("cannot write the metrics file", "err", err)
	}
}
