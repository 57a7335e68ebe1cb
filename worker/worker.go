package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nimbusha/nimbus/workerproto"
)

// The environment a supervisor gives every worker, beside the worker
// protocol's files (package workerproto).
const (
	EnvTopologyID = "STORM_TOPOLOGY_ID"
	EnvPort       = "STORM_PORT"
	EnvExecutors  = "STORM_EXECUTORS"
	EnvCodeDir    = "STORM_CODE_DIR"
)

// DefaultMetricsInterval is how often Run writes the metrics file when
// Config.MetricsInterval is 0: a supervisor reads it at each heartbeat.
const DefaultMetricsInterval = 2 * time.Second

// Config is how New sets up a worker; the zero value is a worker as its
// supervisor started it.
type Config struct {
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
	// Handler is where log records go; a text handler on stderr when nil.
	// It should let every level through: the worker's loggers filter by
	// the log-level file.
	Handler slog.Handler
	// DefaultLevel is the level of loggers the log-level file leaves
	// unset (slog.LevelInfo, the zero value, by default).
	DefaultLevel slog.Level
	// MetricsInterval is how often Run writes the metrics file;
	// DefaultMetricsInterval when 0.
	MetricsInterval time.Duration
	// OnStatus, if set, is called with each status the worker takes up,
	// the first included, by Run (at start, then from its goroutine that
	// follows SIGUSR1); it should return quickly.
	OnStatus func(workerproto.Status)
	// OnBlobUpdate, if set, is called with each change of the worker's
	// blobs (BlobUpdates), by Run, as OnStatus is.
	OnBlobUpdate func(BlobUpdate)
}

// Worker is one worker process's side of the worker protocol: what its
// supervisor told it (topology, port, executors, status, log levels), and
// what it tells its supervisor (errors, counters). Its methods are safe
// for concurrent use. New starts nothing; Run does.
type Worker struct {
	topologyID string
	port       int
	executors  Executors
	codeDir    string
	proto      workerproto.Worker
	cfg        Config
	started    time.Time

	levels  levelTable
	base    slog.Handler
	log     *slog.Logger
	metrics registry

	mu           sync.Mutex
	status       workerproto.Status
	announced    bool // status was delivered to StatusChanges and OnStatus
	stopping     bool
	changed      chan struct{} // closed, and replaced, at each change of status or stopping
	updates      chan workerproto.Status
	blobs        workerproto.Blobs // as the blobs file last said (blobs.go)
	blobUpdates  chan BlobUpdate
	lastWriteErr string // the metrics file's last write error, logged once
	leftOut      bool   // the last write left rows out, logged once
}

// New reads the worker's environment through cfg.Getenv: STORM_TOPOLOGY_ID,
// STORM_PORT, STORM_EXECUTORS and STORM_CODE_DIR, and the worker protocol's
// files. A worker started by hand may lack them all: it is then Active,
// reports nowhere, and has no executors. A variable that is set but
// malformed is an error naming it.
func New(cfg Config) (*Worker, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	w := &Worker{
		topologyID: getenv(EnvTopologyID), codeDir: getenv(EnvCodeDir),
		proto: workerproto.FromEnv(getenv), cfg: cfg, started: time.Now(),
		status: workerproto.Active, changed: make(chan struct{}), updates: make(chan workerproto.Status, 1),
		blobUpdates: make(chan BlobUpdate, 1),
	}
	if v := getenv(EnvPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("worker: %s=%q: want a port, 0 to 65535", EnvPort, v)
		}
		w.port = p
	}
	if v := getenv(EnvExecutors); v != "" {
		es, err := ParseExecutors(v)
		if err != nil {
			return nil, fmt.Errorf("worker: %s=%q: %w", EnvExecutors, v, err)
		}
		w.executors = es
	}
	if w.cfg.MetricsInterval <= 0 {
		w.cfg.MetricsInterval = DefaultMetricsInterval
	}
	w.base = cfg.Handler
	if w.base == nil {
		w.base = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-1 << 20)})
	}
	w.levels.fallback = cfg.DefaultLevel
	w.log = slog.New(w.Handler())
	w.metrics.warn = w.log.Warn
	return w, nil
}

// TopologyID is STORM_TOPOLOGY_ID.
func (w *Worker) TopologyID() string { return w.topologyID }

// Port is the slot's port, STORM_PORT (0 when unset).
func (w *Worker) Port() int { return w.port }

// Executors are the executors this worker runs, STORM_EXECUTORS.
func (w *Worker) Executors() Executors { return w.executors }

// CodeDir is the topology's code directory, STORM_CODE_DIR.
func (w *Worker) CodeDir() string { return w.codeDir }

// Spout returns the counters of spout component, made on first use with
// its executor count from STORM_EXECUTORS.
func (w *Worker) Spout(component string) *Component {
	return w.metrics.component(component, workerproto.KindSpout, w.executors.Of(component))
}

// Bolt returns the counters of bolt component, as Spout does.
func (w *Worker) Bolt(component string) *Component {
	return w.metrics.component(component, workerproto.KindBolt, w.executors.Of(component))
}

// Handler is a slog.Handler that writes to Config.Handler the records of
// loggers whose level, by the log-level file, allows them. A logger is
// named by its LoggerKey attribute (slog.Logger.With(worker.LoggerKey,
// "name")); without one it is the root logger.
func (w *Worker) Handler() slog.Handler {
	return &levelHandler{base: w.base, table: &w.levels}
}

// Logger is the logger called name, a dotted path such as
// "wordcount.split": its level is name's in the log-level file, else its
// nearest named parent's, else ROOT's, else Config.DefaultLevel.
func (w *Worker) Logger(name string) *slog.Logger { return w.log.With(LoggerKey, name) }

// Status is the status the worker holds now.
func (w *Worker) Status() workerproto.Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Emitting reports whether spouts should emit now: the status is Active
// and the worker is not stopping.
func (w *Worker) Emitting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status.Emits() && !w.stopping
}

// StatusChanges delivers the status each time it changes, the first
// included; a reader that falls behind gets the latest. It is never
// closed.
func (w *Worker) StatusChanges() <-chan workerproto.Status { return w.updates }

// WaitEmitting blocks until spouts should emit (Emitting) and returns
// nil, or returns ctx's error when ctx ends first. A spout calls it
// before each batch.
func (w *Worker) WaitEmitting(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.mu.Lock()
		ok, changed := w.status.Emits() && !w.stopping, w.changed
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ReportError reports err through the error file: the supervisor shows
// the latest as the worker's last error. A failure to report is logged.
func (w *Worker) ReportError(err error) {
	if err == nil {
		return
	}
	if rerr := w.proto.ReportError(err.Error()); rerr != nil {
		w.log.Error("cannot report an error to the supervisor", "err", rerr, "error", err)
	}
}

// Run runs body until it returns, ctx ends or the process gets SIGTERM or
// SIGINT, and returns body's error. Meanwhile it follows the status,
// log-level and blobs files (read at start and again on each SIGUSR1) and writes the
// metrics file every Config.MetricsInterval. A stop (ctx, SIGTERM) first
// stops the spouts (Emitting is false), then cancels body's context; once
// body has returned Run writes the metrics one last time, so the final
// counts reach the supervisor, and returns. A worker calls it once.
func (w *Worker) Run(ctx context.Context, body func(ctx context.Context) error) error {
	// Subscribe before the first read, so no change is missed.
	usr1 := make(chan os.Signal, 1)
	if w.proto.StatusFile != "" || w.proto.LogLevelFile != "" || w.proto.BlobsFile != "" {
		signal.Notify(usr1, workerproto.StatusSignal)
	}
	defer signal.Stop(usr1)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(term)
	w.follow()

	// body's context ends only after the spouts stopped.
	bodyCtx, cancelBody := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBody()
	var wg sync.WaitGroup
	loops, endLoops := context.WithCancel(context.Background())
	wg.Add(3)
	go func() { defer wg.Done(); w.followSignals(loops, usr1) }()
	go func() { defer wg.Done(); w.writeMetricsEvery(loops) }()
	go func() {
		defer wg.Done()
		select {
		case <-term:
		case <-ctx.Done():
		case <-loops.Done():
			return
		}
		w.setStopping()
		cancelBody()
	}()
	err := body(bodyCtx)
	w.setStopping()
	endLoops()
	wg.Wait()
	w.flushMetrics()
	if errors.Is(err, context.Canceled) && bodyCtx.Err() != nil {
		err = nil // a body that returned its context's error stopped as asked
	}
	return err
}

// Main runs a worker from its environment with body and exits: 0 after a
// clean stop, 1 when body failed (its error reported and logged), 2 when
// the environment is malformed (said on stderr). It is a worker program's
// whole main.
func Main(cfg Config, body func(ctx context.Context, w *Worker) error) {
	w, err := New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := w.Run(context.Background(), func(ctx context.Context) error { return body(ctx, w) }); err != nil {
		w.ReportError(err)
		w.log.Error("worker failed", "err", err)
		os.Exit(1)
	}
	os.Exit(0)
}
