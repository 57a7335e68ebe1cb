package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nimbusha/nimbus/keeper"
	"github.com/nimbusha/nimbus/logviewer"
)

// A worker's output goes to its log in the logviewer's layout,
// <storm.local.dir>/workers-artifacts/<topology>/<port>/worker.log, which
// its keeper writes and rotates (keeper.Output). Neither the output nor
// the error lines a worker reports go into the heartbeat: every
// ZooKeeper node is readable by anyone (docs/ARCHITECTURE.md section
// 16.5), while the logviewer serves a topology's logs to its readers
// only. The heartbeat's last_error holds what the supervisor itself
// writes: how a run ended, why it could not start, and that the worker
// reported an error.

// reportedErrorText is a worker's last_error once it reported an error
// through the worker protocol: that it did, not what it said.
const reportedErrorText = "the worker reported an error; its text is in its log (stormctl logs, the logviewer), not in ZooKeeper"

// logOutput is how the keeper writes the worker's log: rotated so that it
// and its rotated files stay within logviewer.max.per.worker.logs.size.mb,
// 0640, in the group of the user the worker runs as (as nil: the keeper's).
func (w *worker) logOutput(as *account) *keeper.Output {
	maxBytes, keep := logviewer.Rotation(w.policy.cfg.LogviewerMaxPerWorkerMB)
	gid := -1
	if as != nil {
		gid = int(as.GID)
	}
	return &keeper.Output{Path: w.spec.LogPath, MaxBytes: maxBytes, Keep: keep, GID: gid, Mode: logviewer.FileMode}
}

// useLogLayout points a worker adopted from an older supervisor, whose
// log was <storm.local.dir>/supervisor/workers/<topology>-<port>.log, at
// the logviewer's layout for its next run, and removes that file, which
// the logviewer cannot serve and nothing else would clean. Only the run
// goroutine calls it, before a launch.
func (w *worker) useLogLayout() {
	want := filepath.Join(logviewer.WorkerDir(logviewer.Root(w.policy.cfg.LocalDir), w.spec.TopologyID, w.spec.Port), logviewer.LogName)
	old := w.spec.LogPath
	if old == want {
		return
	}
	w.spec.LogPath = want
	if filepath.Base(old) != fmt.Sprintf("%s-%d.log", w.spec.TopologyID, w.spec.Port) || filepath.Base(filepath.Dir(old)) != "workers" {
		return
	}
	if err := os.Remove(old); err == nil {
		w.log.Info("removed the log an older supervisor kept for the worker; it is now in the logviewer's layout", "old", old, "log", want)
	}
}

// prepareLog makes the worker's log directory and its worker.yaml, whose
// owner and readers the logviewer authorizes with.
func (w *worker) prepareLog(as *account) error {
	gid := -1
	if as != nil {
		gid = int(as.GID)
	}
	_, err := logviewer.Prepare(logviewer.Root(w.policy.cfg.LocalDir), w.spec.Port, logviewer.Meta{
		TopologyID: w.spec.TopologyID, Owner: w.spec.Owner, TopologyUsers: w.spec.TopologyUsers, LogsUsers: w.spec.LogsUsers,
	}, gid)
	return err
}

// reportedError records an error line the worker reported at at: its
// text into the worker's log, and into the heartbeat only that it
// reported one, and when. The text goes through the run's keeper
// (keeper.Conn.Note), the log's one writer, which puts it at a line's end
// and counts it towards the rotation; the last lines are polled before a
// run's keeper is released (worker.go), so none is left without one.
func (w *worker) reportedError(line string, at time.Time) {
	w.mu.Lock()
	conn := w.conn
	w.state.LastError, w.state.LastErrorUnixMs = reportedErrorText, at.UnixMilli()
	w.mu.Unlock()
	if conn == nil || conn.Note("[supervisor] the worker reported an error: "+line) != nil {
		w.log.Info("a reported error is not in the worker's log: no keeper holds it now")
	}
}
