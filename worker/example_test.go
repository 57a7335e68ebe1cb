package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nimbusha/nimbus/worker"
	"github.com/nimbusha/nimbus/workerproto"
)

// protocolDir makes the files a supervisor would, and an environment that
// names them; getenv reads it.
func protocolDir(status workerproto.Status, levels string) (dir string, getenv func(string) string) {
	dir, err := os.MkdirTemp("", "worker-example-")
	if err != nil {
		panic(err)
	}
	env := map[string]string{
		worker.EnvTopologyID:        "wordcount-1-1700000000",
		worker.EnvPort:              "6700",
		worker.EnvExecutors:         "sentence[1-1],split[2-3],count[4-6]",
		workerproto.EnvStatusFile:   filepath.Join(dir, workerproto.StatusFileName),
		workerproto.EnvErrorFile:    filepath.Join(dir, workerproto.ErrorFileName),
		workerproto.EnvMetricsFile:  filepath.Join(dir, workerproto.MetricsFileName),
		workerproto.EnvLogLevelFile: filepath.Join(dir, workerproto.LogLevelFileName),
	}
	must(os.WriteFile(env[workerproto.EnvStatusFile], status.Encode(), 0o644))
	must(os.WriteFile(env[workerproto.EnvErrorFile], nil, 0o600))
	if levels != "" {
		must(os.WriteFile(env[workerproto.EnvLogLevelFile], []byte(levels), 0o644))
	}
	return dir, func(k string) string { return env[k] }
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// A worker counts per component and stream; Run writes the counters to
// the metrics file, and once more when it stops.
func ExampleWorker_Spout() {
	dir, getenv := protocolDir(workerproto.Active, "")
	defer os.RemoveAll(dir)
	w, err := worker.New(worker.Config{Getenv: getenv})
	must(err)
	sentences := w.Spout("sentence").Stream("default")
	split := w.Bolt("split")
	received := split.Input("sentence", "default") // what split takes in, per source component
	words := split.Stream("default")               // what split emits
	must(w.Run(context.Background(), func(ctx context.Context) error {
		for range 3 {
			sentences.Emit(1)
			sentences.Transfer(1)
			received.Execute(40 * time.Microsecond)
			words.Emit(4)
			received.Ack(50 * time.Microsecond)
			sentences.Ack(2 * time.Millisecond)
		}
		return nil
	}))

	b, _, err := workerproto.ReadFile(filepath.Join(dir, workerproto.MetricsFileName), workerproto.MaxMetricsBytes)
	must(err)
	m, err := workerproto.ParseMetrics(b)
	must(err)
	for _, s := range m.Streams {
		fmt.Printf("%s<-%s/%s %s executors=%d emitted=%d acked=%d executed=%d complete=%dus process=%dus execute=%dus\n",
			s.Component, s.Source, s.Stream, s.Kind, s.Executors, s.Emitted, s.Acked, s.Executed, s.CompleteLatencyUs, s.ProcessLatencyUs, s.ExecuteLatencyUs)
	}
	// Output:
	// sentence<-/default spout executors=1 emitted=3 acked=3 executed=0 complete=6000us process=0us execute=0us
	// split<-/default bolt executors=1 emitted=12 acked=0 executed=0 complete=0us process=0us execute=0us
	// split<-sentence/default bolt executors=1 emitted=0 acked=3 executed=3 complete=0us process=150us execute=120us
}

// Loggers are named by dotted paths; the log-level file (Storm's
// set-log-level, written by the supervisor) sets their levels.
func ExampleWorker_Logger() {
	dir, getenv := protocolDir(workerproto.Active, `{"ROOT": "WARN", "wordcount.split": "DEBUG"}`)
	defer os.RemoveAll(dir)
	plain := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: worker.LevelTrace,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	w, err := worker.New(worker.Config{Getenv: getenv, Handler: plain})
	must(err)
	must(w.Run(context.Background(), func(ctx context.Context) error {
		w.Logger("wordcount.split.words").Debug("shown: its parent is at DEBUG")
		w.Logger("wordcount.count").Info("hidden: ROOT is at WARN")
		w.Logger("wordcount.count").Warn("shown")
		return nil
	}))
	// Output:
	// level=DEBUG msg="shown: its parent is at DEBUG" logger=wordcount.split.words
	// level=WARN msg=shown logger=wordcount.count
}

// Spouts emit only while the topology is active; the worker hears of each
// change on SIGUSR1.
func ExampleWorker_StatusChanges() {
	dir, getenv := protocolDir(workerproto.Inactive, "")
	defer os.RemoveAll(dir)
	w, err := worker.New(worker.Config{Getenv: getenv})
	must(err)
	must(w.Run(context.Background(), func(ctx context.Context) error {
		fmt.Println(<-w.StatusChanges(), "emitting:", w.Emitting())
		// What a supervisor does on `stormctl activate`.
		must(workerproto.ReplaceFile(getenv(workerproto.EnvStatusFile), workerproto.Active.Encode(), nil))
		must(syscall.Kill(os.Getpid(), workerproto.StatusSignal))
		fmt.Println(<-w.StatusChanges(), "emitting:", w.Emitting())
		return nil
	}))
	// Output:
	// inactive emitting: false
	// active emitting: true
}

// An error reported shows as the worker's last error.
func ExampleWorker_ReportError() {
	dir, getenv := protocolDir(workerproto.Active, "")
	defer os.RemoveAll(dir)
	w, err := worker.New(worker.Config{Getenv: getenv})
	must(err)
	w.ReportError(errors.New("cannot reach the database:\nconnection refused"))
	b, err := os.ReadFile(getenv(workerproto.EnvErrorFile))
	must(err)
	fmt.Print(string(b))
	// Output:
	// cannot reach the database: connection refused
}

// A stop (SIGTERM, or here the context's end) stops the spouts, ends the
// body's context and writes the final counts.
func ExampleWorker_Run() {
	dir, getenv := protocolDir(workerproto.Active, "")
	defer os.RemoveAll(dir)
	w, err := worker.New(worker.Config{Getenv: getenv})
	must(err)
	ctx, stop := context.WithCancel(context.Background())
	emitted := w.Spout("sentence").Stream("default")
	err = w.Run(ctx, func(ctx context.Context) error {
		for n := 1; w.WaitEmitting(ctx) == nil; n++ {
			emitted.Emit(1)
			if n == 5 {
				stop()       // as SIGTERM would
				<-ctx.Done() // the spouts stopped first
			}
		}
		return ctx.Err()
	})
	fmt.Println("Run:", err, "emitting:", w.Emitting())
	b, _, _ := workerproto.ReadFile(getenv(workerproto.EnvMetricsFile), workerproto.MaxMetricsBytes)
	m, _ := workerproto.ParseMetrics(b)
	fmt.Println("final emitted:", m.Streams[0].Emitted)
	// Output:
	// Run: <nil> emitting: false
	// final emitted: 5
}

// STORM_EXECUTORS names the executors a worker runs.
func ExampleParseExecutors() {
	es, err := worker.ParseExecutors("sentence[1-1],split[2-3],split[4-4]")
	must(err)
	fmt.Println(len(es), "executors;", es.Of("split"), "of split")
	// Output:
	// 3 executors; 2 of split
}
