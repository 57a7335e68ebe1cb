package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/keeper"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
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
	LogPath    string // its worker.log, in the logviewer's layout (workerlog.go)
	Owner      string // the spec's owner: whom the worker runs as, with supervisor.run.worker.as.user
	Env        string // the topology's topology.environment
	Dir        string // its own directory: the worker protocol's files (protocol.go)
	// Who may read its logs besides its owner: the topology conf's
	// topology.users and logs.users (the logviewer's worker.yaml).
	TopologyUsers []string `json:",omitempty"`
	LogsUsers     []string `json:",omitempty"`
	// The restart generation (StormBase.worker_restarts) its slot had when
	// it was started: a later one asks for a restart (restart.go).
	RestartGen int64 `json:",omitempty"`
	// Blobs are its topology's topology.blobstore.map (blobs.go).
	Blobs map[string]validate.BlobUse `json:",omitempty"`
}

// worker runs one workerSpec until stopped, restarting it with backoff.
// Each run is held by a keeper process (keep.go), which outlives this
// supervisor: detach leaves the run to its keeper, stop ends it.
type worker struct {
	spec    workerSpec
	policy  launchPolicy
	keepers keepers
	grace   time.Duration
	log     *slog.Logger
	changed func() // state changed: heartbeat soon

	cancel   context.CancelFunc
	detached chan struct{} // closed by detach
	once     sync.Once
	done     chan struct{}

	logStart int64 // kept for older supervisors' keptState; 0 since the keeper writes the log

	// The worker protocol (protocol.go).
	statusMu   sync.Mutex
	topoStatus workerproto.Status           // what its status file says, or will
	logLevels  workerproto.LogLevels        // what its log-level file says, or will (loglevels.go)
	prepared   bool                         // its status file exists
	owner      *account                     // whom its files were prepared for
	blobs      map[string]blobstore.Version // by key: what its links point at, or will at its next start (blobs.go)
	errMu      sync.Mutex
	errOff     int64         // where the next read of its error file starts
	metrics    workerMetrics // what its metrics file last said (workermetrics.go)

	restarts restartRequests // restarts asked of it (restart.go)

	mu    sync.Mutex
	state *clusterv1.WorkerState
	conn  *keeper.Conn // the current run's keeper; nil between runs
}

// newWorker is a worker of spec, not yet running; status is its topology's
// status, which its first start writes into its status file.
func newWorker(ctx context.Context, spec workerSpec, status workerproto.Status, policy launchPolicy, k keepers, grace time.Duration,
	log *slog.Logger, changed func()) (*worker, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &worker{
		spec: spec, policy: policy, keepers: k, grace: grace, changed: changed, cancel: cancel,
		detached: make(chan struct{}), done: make(chan struct{}), topoStatus: status, restarts: newRestartRequests(spec.RestartGen),
		log:   log.With("topology", spec.TopologyID, "port", spec.Port),
		state: &clusterv1.WorkerState{TopologyId: spec.TopologyID, Port: spec.Port, State: "starting"},
		blobs: map[string]blobstore.Version{},
	}, ctx
}

// startWorker starts running spec in the background, with blobs (by
// key) linked into its directory.
func startWorker(ctx context.Context, spec workerSpec, status workerproto.Status, policy launchPolicy, k keepers, grace time.Duration,
	log *slog.Logger, changed func(), blobs map[string]blobstore.Version) *worker {
	w, ctx := newWorker(ctx, spec, status, policy, k, grace, log, changed)
	maps.Copy(w.blobs, blobs)
	go func() {
		defer close(w.done)
		w.run(ctx, nil)
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

// detach leaves the worker's run to its keeper (this supervisor stops;
// the next one adopts it) and waits until its goroutine returned.
func (w *worker) detach() {
	w.once.Do(func() { close(w.detached) })
	<-w.done
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

// run runs the worker, adopted first if conn is not nil, and again after
// each exit, with backoff, until it is stopped or detached.
func (w *worker) run(ctx context.Context, conn *keeper.Conn) {
	backoff := minRestart
	for {
		started := time.Now()
		ran, err := w.runOnce(ctx, conn)
		conn = nil
		if ctx.Err() != nil || errors.Is(err, errDetached) {
			return
		}
		if reason, ok := restartedOn(err); ok {
			w.restarted(reason)
			continue
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
		// How it ended, in the supervisor's words; what it printed stays
		// in its log (workerlog.go).
		w.set(func(s *clusterv1.WorkerState) {
			s.State, s.Pid = "backoff", 0
			s.LastError, s.LastErrorUnixMs = capError(err), time.Now().UnixMilli()
			s.LastExitCode, s.LastExitSignal, s.LogTail = code, signal, ""
			s.Restarts++
		})
		select {
		case <-ctx.Done():
			return
		case <-w.detached:
			return
		case reason := <-w.restarts.asked:
			w.restarted(reason)
			continue
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxRestart)
	}
}

// errDetached ends a run left to its keeper.
var errDetached = errors.New("supervisor: worker left to its keeper")

// runOnce runs the worker once, through a keeper: conn's, adopted, or a new
// one's. It returns when the worker ended (its exit as the error, nil for
// one this supervisor stopped), when it was detached (errDetached), or when
// no keeper could start it (ran false).
func (w *worker) runOnce(ctx context.Context, conn *keeper.Conn) (ran bool, err error) {
	if conn == nil {
		if conn, err = w.launch(); err != nil {
			return false, err
		}
	}
	w.mu.Lock()
	w.conn = conn
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.conn = nil
		w.mu.Unlock()
		conn.Close()
	}()
	return true, w.hold(ctx, conn)
}

// launch starts a keeper of the worker and connects to it.
func (w *worker) launch() (*keeper.Conn, error) {
	l, as, err := w.command()
	if err != nil {
		return nil, err
	}
	l.State, err = w.keptState()
	if err != nil {
		return nil, err
	}
	conn, err := w.keepers.start(l, nil, w.spec.Port) // the keeper writes the log (l.Output)
	if err != nil {
		return nil, err
	}
	pid := conn.Hello().Pid
	// Not the argv: a command line may carry the topology's conf values
	// (passwords, tokens), and this log is the operator's, not the owner's.
	attrs := []any{"pid", pid, "program", l.Path, "args", len(l.Argv) - 1}
	if as != nil {
		attrs = append(attrs, "user", as.Name, "uid", as.UID)
	}
	w.log.Info("worker started", attrs...)
	return conn, nil
}

// hold keeps the run its keeper holds until it ends, is stopped (ctx) or
// is detached, pinging the keeper so that it knows its supervisor is here.
func (w *worker) hold(ctx context.Context, conn *keeper.Conn) error {
	if e := conn.Hello().Exit; e != nil { // ended while no supervisor was there
		return w.ended(conn, e, true)
	}
	pid := conn.Hello().Pid
	// An older supervisor's heartbeat may have carried a tail: none now.
	w.set(func(s *clusterv1.WorkerState) { s.State, s.Pid, s.LogTail = "running", int32(pid), "" })
	ping := time.NewTicker(w.keepers.pingEvery())
	defer ping.Stop()
	for {
		select {
		case e, ok := <-conn.Exits():
			return w.ended(conn, e, ok)
		case <-ping.C:
			_ = conn.Ping() // a keeper gone says so on Exits
		case <-w.detached:
			return errDetached
		case reason := <-w.restarts.asked:
			_ = w.stopRun(conn, pid)
			return restartError{reason}
		case <-ctx.Done():
			return w.stopRun(conn, pid)
		}
	}
}

// stopRun ends a run this supervisor no longer wants: SIGTERM, SIGKILL
// after the grace, then waits for the keeper to say it ended.
func (w *worker) stopRun(conn *keeper.Conn, pid int) error {
	w.set(func(s *clusterv1.WorkerState) { s.State = "stopping" })
	if err := conn.Stop(w.grace); err == nil {
		select {
		case e, ok := <-conn.Exits():
			if ok {
				w.pollErrors() // its last reports, into its log while its keeper holds it
				_ = conn.Release()
				if e.Signal == syscall.SIGKILL.String() {
					w.log.Warn("worker did not stop in time; killed", "grace", w.grace)
				}
			}
		case <-time.After(w.grace + stopSlack):
			w.log.Warn("worker's keeper did not report its end in time", "pid", pid)
		}
	}
	w.log.Info("worker stopped", "pid", pid)
	return nil
}

// stopSlack is how long, past the grace, a stop waits for the keeper to
// report the end it forced.
const stopSlack = 5 * time.Second

// ended is how a run ended that this supervisor did not stop: the keeper
// reported the worker's exit (ok), which is then released, or the keeper
// itself is gone.
func (w *worker) ended(conn *keeper.Conn, e *keeper.Exit, ok bool) error {
	if !ok {
		return keeper.ErrGone
	}
	w.pollErrors() // its last reports, into its log while its keeper holds it
	_ = conn.Release()
	return exitError(e)
}

// signal sends sig to the worker through its keeper, if it runs.
func (w *worker) signal(sig syscall.Signal) bool {
	w.mu.Lock()
	conn := w.conn
	w.mu.Unlock()
	return conn != nil && conn.Signal(sig) == nil
}
