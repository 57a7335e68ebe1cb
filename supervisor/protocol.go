package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// The supervisor's side of the worker protocol (package workerproto): each
// worker's directory, <storm.local.dir>/supervisor/workers/<topology>-<port>/,
// holds its status file, which the supervisor writes, and its error file,
// which the worker appends to.

// maxErrorRead bounds what one heartbeat reads of a worker's error file.
const maxErrorRead = 4 << 10

// protoStatus is the worker-protocol status of a StormBase status; ok is
// false for a status it does not know. A rebalancing topology does not
// emit, as in Storm.
func protoStatus(s clusterv1.TopologyStatus) (st workerproto.Status, ok bool) {
	switch s {
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE:
		return workerproto.Active, true
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
		return workerproto.Inactive, true
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED:
		return workerproto.Killed, true
	default:
		return "", false
	}
}

// topologyStatus is what the /storms cache says of topology id; ok is
// false when it says nothing usable (no node, or one that never decoded):
// then a worker keeps the status it has, so a ZooKeeper outage or a lagging
// cache changes nothing (invariant 7).
func (s *Supervisor) topologyStatus(id string) (workerproto.Status, bool) {
	base := s.storms.Snapshot()[id]
	if base == nil {
		return "", false
	}
	return protoStatus(base.GetStatus())
}

// applyStatuses tells every worker its topology's current status.
func (s *Supervisor) applyStatuses() {
	s.mu.Lock()
	ws := make([]*worker, 0, len(s.workers))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		if st, ok := s.topologyStatus(w.spec.TopologyID); ok {
			w.setTopologyStatus(st)
		}
	}
}

// setTopologyStatus records st; if it is new, it rewrites the status file
// of a worker that has one and signals its process.
func (w *worker) setTopologyStatus(st workerproto.Status) {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	if st == w.topoStatus {
		return
	}
	w.topoStatus = st
	if !w.prepared {
		return // the first start writes it
	}
	if err := writeStatus(w.spec.Dir, st, w.owner); err != nil {
		w.log.Error("cannot write worker status file", "status", st, "err", err)
		return
	}
	pid, signalled := w.tell()
	w.log.Info("worker status changed", "status", st, "pid", pid, "signalled", signalled)
}

// prepareFiles makes the worker's directory, writes its status file,
// empties its error file and its metrics directory, before a start: as the
// code, a worker run as a user gets the directory and status file
// root:<its group> (0750, 0640), and the error file (0600) and metrics
// directory (0700) as its own.
func (w *worker) prepareFiles(as *account) error {
	dir := w.spec.Dir
	if err := prepareDir(dir, as); err != nil {
		return err
	}
	w.statusMu.Lock()
	err := writeStatus(dir, w.topoStatus, as)
	if err == nil {
		err = writeLogLevels(dir, w.logLevels, as)
	}
	w.owner, w.prepared = as, err == nil
	w.statusMu.Unlock()
	if err != nil {
		return err
	}
	w.errMu.Lock()
	w.errOff = 0
	err = resetErrors(dir, as)
	w.errMu.Unlock()
	if err != nil {
		return err
	}
	return w.prepareMetrics(as)
}

// pollErrors takes the last error line the worker wrote since the last
// poll, if any, as its last error, with the file's modification time. The
// heartbeat calls it; it does not trigger one.
func (w *worker) pollErrors() {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.spec.Dir == "" {
		return
	}
	line, at, next, ok := readReported(filepath.Join(w.spec.Dir, workerproto.ErrorFileName), w.errOff)
	w.errOff = next
	if !ok {
		return
	}
	w.reportedError(line, at) // its text into its log, not the heartbeat (workerlog.go)
}

// prepareDir makes dir (not following a symlink in its place) and sets
// its owner and mode.
func prepareDir(dir string, as *account) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("supervisor: %s is not a directory", dir)
	}
	if as == nil {
		return os.Chmod(dir, 0o755)
	}
	if err := os.Lchown(dir, 0, int(as.GID)); err != nil {
		return err
	}
	return os.Chmod(dir, codeDirMode)
}

// writeStatus replaces dir's status file atomically (a temporary file
// renamed over it), so a worker reads the old status or the new.
func writeStatus(dir string, st workerproto.Status, as *account) error {
	return workerproto.ReplaceFile(filepath.Join(dir, workerproto.StatusFileName), st.Encode(), readableBy(as))
}

// readableBy sets a file the supervisor writes for a worker to read (its
// status and log-level files): root:<the worker's group> 0640 for a worker
// run as a user, else 0644.
func readableBy(as *account) func(*os.File) error {
	return func(f *os.File) error {
		if as == nil {
			return f.Chmod(0o644)
		}
		if err := f.Chown(0, int(as.GID)); err != nil {
			return err
		}
		return f.Chmod(codeFileMode)
	}
}

// resetErrors creates dir's error file empty, owned by the worker's user.
func resetErrors(dir string, as *account) error {
	path := filepath.Join(dir, workerproto.ErrorFileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if as != nil {
		if err := f.Chown(int(as.UID), int(as.GID)); err != nil {
			return err
		}
	}
	return f.Chmod(0o600)
}

// readReported reads the error file at path from offset from on and
// returns its last complete line, the file's modification time and where
// the next read starts; ok is false when no complete line was added. A
// file shorter than from (the worker truncated it) is read from its start;
// at most maxErrorRead bytes at its end are read.
func readReported(path string, from int64) (line string, at time.Time, next int64, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", time.Time{}, from, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", time.Time{}, from, false
	}
	if fi.Size() < from {
		from = 0
	}
	if fi.Size() == from {
		return "", time.Time{}, from, false
	}
	start := max(from, fi.Size()-maxErrorRead)
	buf := make([]byte, fi.Size()-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", time.Time{}, from, false
	}
	line, consumed, ok := workerproto.LastLine(buf[:n])
	if !ok {
		return "", time.Time{}, from, false
	}
	return line, fi.ModTime(), start + int64(consumed), true
}

// tell sends the worker the protocol's signal (a file of its protocol
// changed), if it catches it, and says to which pid and whether it went.
// It goes through the worker's keeper, which signals only while the
// worker it holds runs: a pid this supervisor read may be another
// process's by now.
func (w *worker) tell() (pid int, signalled bool) {
	w.mu.Lock()
	pid = int(w.state.GetPid())
	w.mu.Unlock()
	return pid, pid > 0 && catches(pid, workerproto.StatusSignal) && w.signal(workerproto.StatusSignal)
}

// catches reports whether process pid catches sig (Linux's
// /proc/<pid>/status SigCgt): a process that does not would die of it.
func catches(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}
