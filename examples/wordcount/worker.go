package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nimbusha/nimbus/worker"
	"github.com/nimbusha/nimbus/workerproto"
)

// tickInterval is how often the simulated word count runs.
const tickInterval = time.Second

// queryWriteTimeout bounds the write of the answer to one port query.
const queryWriteTimeout = time.Second

// runContext is run without the signal handling of a whole program: it
// runs the worker until ctx ends (or SIGTERM, which the worker library
// handles) and returns the exit code. Tests call it with a context they
// cancel.
func runContext(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errBadFlags): // the flag package has printed why
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "wordcount: %v\n", err)
		return exitUsage
	}
	w, err := worker.New(worker.Config{Getenv: getenv, Handler: slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: worker.LevelTrace})})
	if err != nil {
		fmt.Fprintf(stderr, "wordcount: %v\n", err)
		return exitUsage
	}

	// A real worker listens on its slot port for its peers. Binding it also
	// makes a second worker on the same slot fail at once.
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		fmt.Fprintf(stderr, "wordcount: cannot listen on slot port %d: %v\n", cfg.Port, err)
		return exitError
	}
	code := exitOK
	_ = w.Run(ctx, func(ctx context.Context) error {
		code = runWorker(ctx, cfg, ln, w)
		return nil
	})
	return code
}

// runWorker logs the start line, answers port queries on ln and runs the
// word count every tickInterval until ctx ends or ln fails, counting
// Storm's counters through w. Its spouts emit only while w says the
// topology is active; it logs each status it takes up ("status" with the
// totals so far), which is its acknowledgement. It logs the totals, closes
// ln, waits for the query server to return, and returns the exit code:
// exitOK when ctx ended, exitError when the listener failed.
func runWorker(ctx context.Context, cfg config, ln net.Listener, w *worker.Worker) int {
	logger := w.Logger("wordcount")
	port := ln.Addr().(*net.TCPAddr).Port
	spouts := 0
	for _, e := range cfg.Executors {
		if isSpout(e.Component) {
			spouts++
		}
	}
	logger.Info("worker started",
		"topology_id", cfg.TopologyID, "port", port, "executors", cfg.Executors,
		"spouts", spouts, "code_dir", cfg.CodeDir, "pid", os.Getpid())

	var (
		status atomic.Value // workerproto.Status, as acknowledged
		tuples atomic.Int64
	)
	status.Store(workerproto.Active)
	answer := func() string {
		return fmt.Sprintf("wordcount %s port=%d executors=%d status=%s tuples=%d\n",
			cfg.TopologyID, port, len(cfg.Executors), status.Load(), tuples.Load())
	}
	served := make(chan error, 1)
	go func() { served <- serveQueries(ln, answer) }()

	if cfg.ReportError != "" {
		logger.Info("reporting error", "error", cfg.ReportError)
		w.ReportError(errors.New(cfg.ReportError))
	}

	c := newCounter(rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), newStreams(w))
	ticker := time.NewTicker(tickInterval)
	defer ticker.Stop()
	code := exitOK
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-served:
			logger.Error("listener failed", "err", err)
			served <- nil // so the wait below returns
			code = exitError
			break loop
		case st := <-w.StatusChanges():
			status.Store(st)
			logger.Info("status", "status", st, "emitting", st.Emits(), "tuples", c.tuples)
		case <-ticker.C:
			if !w.Emitting() {
				continue // deactivated, killed or stopping: spouts emit nothing
			}
			n, words := c.tick(spouts)
			tuples.Store(c.tuples)
			logger.Info("processed", "tuples", n, "words", words)
			if logger.Enabled(ctx, slog.LevelDebug) { // wordcount at DEBUG in the log-level file
				top, count := c.top()
				logger.Debug("top word", "word", top, "count", count)
			}
		}
	}

	word, count := c.top()
	logger.Info("worker stopping",
		"tuples", c.tuples, "words", c.words, "distinct_words", len(c.counts),
		"top_word", word, "top_count", count)
	ln.Close()
	<-served
	return code
}

// serveQueries answers every connection on ln with answer() and closes it. It
// does not read from the connection. It returns nil once ln is closed, or the
// error that stopped it accepting.
func serveQueries(ln net.Listener, answer func() string) error {
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		_ = conn.SetWriteDeadline(time.Now().Add(queryWriteTimeout))
		_, _ = io.WriteString(conn, answer()) // a peer that has gone gets nothing
		_ = conn.Close()
	}
}
