package supervisor

import (
	"maps"
	"path/filepath"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
	"github.com/nimbusha/nimbus/workerproto"
)

// A topology's log levels (StormBase.log_levels, set by SetLogConfig)
// reach its workers through the worker protocol's log-level file, written
// and signalled as the status file is. The supervisor applies each
// timeout by its own clock, so a level reverts on time whether or not any
// nimbus runs; the reconcile loop wakes for the next one.

// levelsAt are the levels a topology's workers have at now, and when they
// next change (zero: never): a logger's target level until its timeout,
// then its reset level, or no entry when it has none. An entry a worker's
// file could not hold (a name or level written by hand into ZooKeeper) is
// left out: it must not stop the others, nor a worker's start.
func levelsAt(entries map[string]*clusterv1.LoggerLevel, now time.Time) (workerproto.LogLevels, time.Time) {
	levels := workerproto.LogLevels{}
	var next time.Time
	for name, l := range entries {
		level := l.GetTargetLevel()
		end := time.UnixMilli(l.GetTimeoutUnixMs())
		switch {
		case l.GetTimeoutUnixMs() == 0:
		case now.Before(end):
			if next.IsZero() || end.Before(next) {
				next = end
			}
		default:
			level = l.GetResetLevel()
		}
		if parsed, err := workerproto.ParseLevel(level); err == nil && validate.LoggerName("logger", name) == nil {
			levels[name] = parsed
		}
	}
	return levels, next
}

// applyLogLevels tells every worker its topology's log levels now, and
// returns when they next change (zero: never). A topology the /storms
// cache says nothing of keeps the levels its workers have.
func (s *Supervisor) applyLogLevels() time.Time {
	now := time.Now()
	storms := s.storms.Snapshot()
	s.mu.Lock()
	ws := make([]*worker, 0, len(s.workers))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	var next time.Time
	for _, w := range ws {
		base := storms[w.spec.TopologyID]
		if base == nil {
			continue
		}
		levels, at := levelsAt(base.GetLogLevels(), now)
		w.setLogLevels(levels)
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// setLogLevels records levels; if they are new, it rewrites the log-level
// file of a worker that has its files and signals its process.
func (w *worker) setLogLevels(levels workerproto.LogLevels) {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	if maps.Equal(levels, w.logLevels) {
		return
	}
	w.logLevels = levels
	if !w.prepared {
		return // the first start writes it
	}
	if err := writeLogLevels(w.spec.Dir, levels, w.owner); err != nil {
		w.log.Error("cannot write the worker's log-level file", "err", err)
		return
	}
	pid, signalled := w.tell()
	w.log.Info("worker log levels changed", "loggers", len(levels), "pid", pid, "signalled", signalled)
}

// writeLogLevels replaces dir's log-level file atomically, readable as
// the status file is.
func writeLogLevels(dir string, levels workerproto.LogLevels, as *account) error {
	data, err := workerproto.EncodeLogLevels(levels)
	if err != nil {
		return err
	}
	return workerproto.ReplaceFile(filepath.Join(dir, workerproto.LogLevelFileName), data, readableBy(as))
}
