package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/stats"
	"github.com/nimbusha/nimbus/workerproto"
)

// The supervisor's side of the worker protocol's metrics file: each
// worker's <dir>/metrics/ is the worker's own directory, where it replaces
// metrics.json atomically; at each heartbeat the supervisor reads the file
// if it changed and carries what it says in the worker's state, within the
// heartbeat's budget (metricsbudget.go).

// workerMetrics is what a worker's metrics file last said, as read.
type workerMetrics struct {
	mu      sync.Mutex
	seen    fileStamp                // the file last read, good or not
	good    *clusterv1.WorkerMetrics // its last good content, within maxWorkerMetricsBytes; nil: none
	problem string                   // the last problem logged; "" after a good read
	carried carriage                 // the names the run's metrics carry (metricsbudget.go)
}

// fileStamp tells a file's versions apart: a worker renames a new file
// over the old one, so each version has its own inode.
type fileStamp struct {
	ino, size int64
	mtime     time.Time
}

// metricsPath is a worker's metrics file, STORM_METRICS_FILE.
func metricsPath(dir string) string {
	return filepath.Join(dir, workerproto.MetricsDirName, workerproto.MetricsFileName)
}

// prepareMetrics empties the worker's metrics directory before a start, so
// a run that writes nothing has no metrics, and forgets what it read: the
// directory is the worker's user's (0700), where it may create its
// temporary file and rename it.
func (w *worker) prepareMetrics(as *account) error {
	mdir := filepath.Join(w.spec.Dir, workerproto.MetricsDirName)
	w.metrics.mu.Lock()
	defer w.metrics.mu.Unlock()
	w.metrics.seen, w.metrics.good, w.metrics.problem, w.metrics.carried = fileStamp{}, nil, "", carriage{}
	if err := os.RemoveAll(mdir); err != nil {
		return err
	}
	if err := os.Mkdir(mdir, 0o700); err != nil {
		return err
	}
	if as != nil {
		if err := os.Lchown(mdir, int(as.UID), int(as.GID)); err != nil {
			return err
		}
	}
	return nil
}

// pollMetrics reads the worker's metrics file if it changed since the last
// look. A file that cannot be used keeps the last good content and is
// logged once per distinct problem. The heartbeat calls it.
func (w *worker) pollMetrics() {
	if w.spec.Dir == "" {
		return
	}
	w.statusMu.Lock()
	owner := w.owner
	w.statusMu.Unlock()
	uid := uint32(os.Geteuid())
	if owner != nil {
		uid = owner.UID
	}
	w.metrics.mu.Lock()
	defer w.metrics.mu.Unlock()
	m, stamp, err := readMetrics(metricsPath(w.spec.Dir), uid, w.metrics.seen)
	switch {
	case errors.Is(err, errUnchanged), errors.Is(err, os.ErrNotExist):
		return
	case err != nil:
		w.metrics.seen = stamp
		if msg := err.Error(); msg != w.metrics.problem {
			w.metrics.problem = msg
			w.log.Warn("ignoring the worker's metrics file; its last good counts stand", "err", err)
		}
		return
	}
	w.metrics.seen, w.metrics.problem = stamp, ""
	w.metrics.good = fitMetrics(keepAssigned(m, assignedComponents(w.spec.Executors)), maxWorkerMetricsBytes, &w.metrics.carried)
}

// lastMetrics is what the worker last reported, nil for nothing, with the
// streams folded that its run's carriage folds by now. The caller may
// change it.
func (w *worker) lastMetrics() *clusterv1.WorkerMetrics {
	w.metrics.mu.Lock()
	defer w.metrics.mu.Unlock()
	if w.metrics.good == nil {
		return nil
	}
	return fitMetrics(cloneMetrics(w.metrics.good), maxWorkerMetricsBytes, &w.metrics.carried)
}

// fitMetrics cuts m, this worker's, to limit bytes with its run's
// carriage, so what it folds stays folded for the run.
func (w *worker) fitMetrics(m *clusterv1.WorkerMetrics, limit int) *clusterv1.WorkerMetrics {
	w.metrics.mu.Lock()
	defer w.metrics.mu.Unlock()
	return fitMetrics(m, limit, &w.metrics.carried)
}

// assignedComponents are the components of STORM_EXECUTORS,
// "component[start-end],...".
func assignedComponents(executors string) map[string]bool {
	out := map[string]bool{}
	for _, e := range strings.Split(executors, ",") {
		if name, _, ok := strings.Cut(strings.TrimSpace(e), "["); ok && name != "" {
			out[name] = true
		}
	}
	return out
}

// keepAssigned leaves out m's rows of components the worker was not given:
// their names are the worker's text, and the heartbeat is world-readable.
// Each counts in dropped_streams.
func keepAssigned(m *clusterv1.WorkerMetrics, components map[string]bool) *clusterv1.WorkerMetrics {
	kept := m.Streams[:0]
	for _, r := range m.GetStreams() {
		if components[r.GetComponent()] {
			kept = append(kept, r)
		} else {
			m.DroppedStreams++
		}
	}
	m.Streams = kept
	return m
}

// errUnchanged is a metrics file read already.
var errUnchanged = errors.New("supervisor: metrics file unchanged")

// readMetrics reads and converts the metrics file at path unless its stamp
// is seen's. It must be a regular file of uid (a hard link to someone
// else's file is not the worker's report), at most
// workerproto.MaxMetricsBytes.
func readMetrics(path string, uid uint32, seen fileStamp) (*clusterv1.WorkerMetrics, fileStamp, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, seen, err
	}
	if stamp := stampOf(fi); stamp == seen {
		return nil, seen, errUnchanged
	}
	b, fi, err := workerproto.ReadFile(path, workerproto.MaxMetricsBytes)
	if err != nil {
		if fi == nil {
			return nil, seen, err
		}
		return nil, stampOf(fi), err
	}
	stamp := stampOf(fi)
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid != uid {
		return nil, stamp, fmt.Errorf("supervisor: %s belongs to uid %d, not the worker's %d", path, sys.Uid, uid)
	}
	m, err := workerproto.ParseMetrics(b)
	if err != nil {
		return nil, stamp, err
	}
	return toProto(m), stamp, nil
}

func stampOf(fi os.FileInfo) fileStamp {
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = int64(sys.Ino)
	}
	return s
}

// toProto is the heartbeat's form of a metrics file.
func toProto(m workerproto.Metrics) *clusterv1.WorkerMetrics {
	out := &clusterv1.WorkerMetrics{TakenUnixMs: m.TakenUnixMs, StartedUnixMs: m.StartedUnixMs}
	out.Streams = make([]*clusterv1.StreamStats, 0, len(m.Streams))
	for _, s := range m.Streams {
		row := &clusterv1.StreamStats{Component: s.Component, Source: s.Source, Stream: s.Stream, Kind: s.Kind, Executors: s.Executors}
		stats.SetCounts(row, stats.Counts{ // the file's row, in the file's names: the one copy of the list outside stats
			Emitted: s.Emitted, Transferred: s.Transferred, Acked: s.Acked, Failed: s.Failed, Executed: s.Executed,
			CompleteLatencyUs: s.CompleteLatencyUs, ProcessLatencyUs: s.ProcessLatencyUs, ExecuteLatencyUs: s.ExecuteLatencyUs,
		})
		out.Streams = append(out.Streams, row)
	}
	return out
}
