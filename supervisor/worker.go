package supervisor

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// Restart backoff: doubles from minRestart to maxRestart; a worker that ran
// for stableAfter counts as healthy again.
const (
	minRestart  = time.Second
	maxRestart  = 30 * time.Second
	stableAfter = time.Minute
)

// workerSpec is what a slot should run: one topology's executors.
type workerSpec struct {
	TopologyID string
	Port       int32
	Executors  string // STORM_EXECUTORS: component[start-end],...
	Argv       []string
	CodeDir    string
	LogPath    string
	Owner      string // the spec's owner: whom the worker runs as, with supervisor.run.worker.as.user
	Env        string // the topology's topology.environment
	Dir        string // its own directory: the worker protocol's files (protocol.go)
}

// worker runs one workerSpec until stopped, restarting it with backoff.
type worker struct {
	spec    workerSpec
	policy  launchPolicy
	spawn   *spawner
	grace   time.Duration
	log     *slog.Logger
	changed func() // state changed: heartbeat soon

	cancel context.CancelFunc
	done   chan struct{}

	logStart int64 // where the current run's output starts in its log (run's goroutine only)

	// The worker protocol (protocol.go).
	statusMu   sync.Mutex
	topoStatus workerproto.Status // what its status file says, or will
	prepared   bool               // its status file exists
	owner      *account           // whom its files were prepared for
	errMu      sync.Mutex
	errOff     int64 // where the next read of its error file starts

	mu    sync.Mutex
	state *clusterv1.WorkerState
}

// startWorker starts running spec in the background; status is its
// topology's status, which its first start writes into its status file.
func startWorker(ctx context.Context, spec workerSpec, status workerproto.Status, policy launchPolicy, sp *spawner, grace time.Duration, log *slog.Logger, changed func()) *worker {
	ctx, cancel := context.WithCancel(ctx)
	w := &worker{
		spec: spec, policy: policy, spawn: sp, grace: grace, changed: changed, cancel: cancel, done: make(chan struct{}),
		topoStatus: status,
		log:        log.With("topology", spec.TopologyID, "port", spec.Port),
		state:      &clusterv1.WorkerState{TopologyId: spec.TopologyID, Port: spec.Port, State: "starting"},
	}
	go func() {
		defer close(w.done)
		w.run(ctx)
	}()
	return w
}

// stop ends the worker (SIGTERM, then SIGKILL after the grace period),
// waits for it and removes its directory.
func (w *worker) stop() {
	w.cancel()
	<-w.done
	if w.spec.Dir != "" {
		_ = os.RemoveAll(w.spec.Dir)
	}
}

// status is the worker's state for heartbeats.
func (w *worker) status() *clusterv1.WorkerState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return proto.Clone(w.state).(*clusterv1.WorkerState)
}

func (w *worker) set(f func(*clusterv1.WorkerState)) {
	w.mu.Lock()
	f(w.state)
	w.mu.Unlock()
	w.changed()
}

func (w *worker) run(ctx context.Context) {
	backoff := minRestart
	for {
		started := time.Now()
		ran, err := w.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > stableAfter {
			backoff = minRestart
		}
		if ran {
			w.log.Warn("worker exited; restarting after backoff", "err", err, "backoff", backoff)
		} else {
			w.log.Error("cannot start worker; retrying after backoff", "err", err, "backoff", backoff)
		}
		code, signal := exitOf(err)
		tail := ""
		if ran {
			tail = readTail(w.spec.LogPath, w.logStart)
		}
		w.set(func(s *clusterv1.WorkerState) {
			s.State, s.Pid = "backoff", 0
			s.LastError, s.LastErrorUnixMs = capError(err), time.Now().UnixMilli()
			s.LastExitCode, s.LastExitSignal, s.LogTail = code, signal, tail
			s.Restarts++
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxRestart)
	}
}

// runOnce runs the process until it exits or ctx ends (then stops it).
// ran is false when no process started: the worker was refused
// (launch.go) or could not be started.
func (w *worker) runOnce(ctx context.Context) (ran bool, err error) {
	cmd, logFile, as, err := w.command()
	if err != nil {
		return false, err
	}
	defer logFile.Close()
	w.logStart = 0
	if fi, err := logFile.Stat(); err == nil {
		w.logStart = fi.Size() // this run's output starts here
	}
	if err := w.spawn.start(cmd); err != nil {
		return false, err
	}
	pid := cmd.Process.Pid
	// Not the argv: a command line may carry the topology's conf values
	// (passwords, tokens), and this log is the operator's, not the owner's.
	attrs := []any{"pid", pid, "program", cmd.Path, "args", len(cmd.Args) - 1}
	if as != nil {
		attrs = append(attrs, "user", as.Name, "uid", as.UID)
	}
	w.log.Info("worker started", attrs...)
	// The tail told of the last exit; a running worker's output is its log's.
	w.set(func(s *clusterv1.WorkerState) { s.State, s.Pid, s.LogTail = "running", int32(pid), "" })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Whatever ends the worker, its whole process group goes with it: a
	// child left behind (a shell's, a launcher's) would run beside the
	// worker's replacement. The group id stays reserved while any member
	// lives, so the kill cannot reach an unrelated process.
	defer func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }()
	select {
	case err := <-exited:
		if err == nil {
			err = errCleanExit
		}
		return true, err
	case <-ctx.Done():
	}
	w.set(func(s *clusterv1.WorkerState) { s.State = "stopping" })
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(w.grace):
		w.log.Warn("worker did not stop in time; killing it", "grace", w.grace)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
	w.log.Info("worker stopped", "pid", pid)
	return true, nil
}
