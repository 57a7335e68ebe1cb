package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/workerproto"
)

// files is a worker's protocol files in a temporary directory.
func files(t *testing.T) (workerproto.Worker, func(string) string) {
	t.Helper()
	dir := t.TempDir()
	p := workerproto.Worker{
		StatusFile: filepath.Join(dir, workerproto.StatusFileName), ErrorFile: filepath.Join(dir, workerproto.ErrorFileName),
		MetricsFile: filepath.Join(dir, workerproto.MetricsFileName), LogLevelFile: filepath.Join(dir, workerproto.LogLevelFileName),
	}
	if err := os.WriteFile(p.StatusFile, workerproto.Active.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		EnvExecutors: "sentence[1-1],split[2-3],split[4-5]", workerproto.EnvStatusFile: p.StatusFile,
		workerproto.EnvErrorFile: p.ErrorFile, workerproto.EnvMetricsFile: p.MetricsFile, workerproto.EnvLogLevelFile: p.LogLevelFile,
	}
	return p, func(k string) string { return env[k] }
}

// waitFor polls cond under a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		<-tick.C
	}
}

func signalSelf(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
}

func TestNewRefusesAMalformedEnvironment(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{EnvPort, "67OO", `STORM_PORT="67OO": want a port`},
		{EnvPort, "70000", `STORM_PORT="70000"`},
		{EnvExecutors, "split[3-2]", `STORM_EXECUTORS="split[3-2]": entry 1 "split[3-2]": end 2 is before start 3`},
	} {
		_, err := New(Config{Getenv: func(k string) string {
			if k == tc.key {
				return tc.value
			}
			return ""
		}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestWithoutASupervisor(t *testing.T) {
	w, err := New(Config{Getenv: func(string) string { return "" }, Handler: slog.DiscardHandler})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(t.Context(), func(ctx context.Context) error {
		if !w.Emitting() || w.Status() != workerproto.Active {
			t.Error("a worker started by hand does not emit")
		}
		w.Spout("s").Stream("default").Emit(1)
		w.ReportError(errors.New("nowhere"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLogLevelsFollowTheFile(t *testing.T) {
	p, getenv := files(t)
	var out bytes.Buffer
	var mu sync.Mutex
	w, err := New(Config{Getenv: getenv, Handler: slog.NewTextHandler(&lockedWriter{w: &out, mu: &mu}, &slog.HandlerOptions{Level: LevelTrace})})
	if err != nil {
		t.Fatal(err)
	}
	split := w.Logger("wordcount.split")
	err = w.Run(t.Context(), func(ctx context.Context) error {
		if split.Enabled(ctx, slog.LevelDebug) {
			t.Error("DEBUG on with no file (default INFO)")
		}
		if err := workerproto.ReplaceFile(p.LogLevelFile, []byte(`{"wordcount":"DEBUG","ROOT":"WARN"}`), nil); err != nil {
			t.Fatal(err)
		}
		signalSelf(t, workerproto.StatusSignal)
		waitFor(t, "DEBUG for wordcount.split", func() bool { return split.Enabled(ctx, slog.LevelDebug) })
		if w.Logger("other").Enabled(ctx, slog.LevelInfo) {
			t.Error("ROOT at WARN lets INFO through")
		}
		// With: a logger named by its attribute.
		if !slog.New(w.Handler()).With(LoggerKey, "wordcount.count").Enabled(ctx, slog.LevelDebug) {
			t.Error("a logger named with With does not take its parent's level")
		}
		// A bad file is logged and the levels stand.
		if err := workerproto.ReplaceFile(p.LogLevelFile, []byte(`{"ROOT":"LOUD"}`), nil); err != nil {
			t.Fatal(err)
		}
		signalSelf(t, workerproto.StatusSignal)
		waitFor(t, "the bad file logged", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(out.String(), "cannot read the log-level file")
		})
		if !split.Enabled(ctx, slog.LevelDebug) {
			t.Error("a bad file changed the levels")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func TestCountersAreWrittenPeriodicallyAndAtStop(t *testing.T) {
	p, getenv := files(t)
	var statuses []workerproto.Status
	w, err := New(Config{Getenv: getenv, Handler: slog.DiscardHandler, MetricsInterval: 10 * time.Millisecond,
		OnStatus: func(st workerproto.Status) { statuses = append(statuses, st) }})
	if err != nil {
		t.Fatal(err)
	}
	read := func() workerproto.Metrics {
		b, _, err := workerproto.ReadFile(p.MetricsFile, workerproto.MaxMetricsBytes)
		if err != nil {
			return workerproto.Metrics{}
		}
		m, err := workerproto.ParseMetrics(b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	split := w.Bolt("split").Stream("default")
	err = w.Run(t.Context(), func(ctx context.Context) error {
		var wg sync.WaitGroup
		for range 8 { // concurrent counting is safe (go test -race)
			wg.Go(func() {
				for range 1000 {
					split.Execute(time.Microsecond)
				}
			})
		}
		wg.Wait()
		waitFor(t, "8000 executed in the metrics file", func() bool {
			m := read()
			return len(m.Streams) == 1 && m.Streams[0].Executed == 8000
		})
		split.Execute(0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := read()
	if s := m.Streams[0]; s.Executed != 8001 || s.ExecuteLatencyUs != 8000 || s.Executors != 2 || s.Kind != workerproto.KindBolt {
		t.Fatalf("final row %+v", s)
	}
	if m.StartedUnixMs == 0 || m.TakenUnixMs < m.StartedUnixMs {
		t.Fatalf("times %d, %d", m.StartedUnixMs, m.TakenUnixMs)
	}
	if len(statuses) != 1 || statuses[0] != workerproto.Active {
		t.Fatalf("OnStatus heard %v, want [active]", statuses)
	}
}

func TestSIGTERMStopsCleanly(t *testing.T) {
	p, getenv := files(t)
	w, err := New(Config{Getenv: getenv, Handler: slog.DiscardHandler, MetricsInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	emitted := w.Spout("sentence").Stream("default")
	err = w.Run(t.Context(), func(ctx context.Context) error {
		emitted.Emit(3)
		signalSelf(t, syscall.SIGTERM)
		<-ctx.Done()
		if w.Emitting() {
			t.Error("spouts emit after SIGTERM")
		}
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("Run after SIGTERM: %v, want nil", err)
	}
	b, _, err := workerproto.ReadFile(p.MetricsFile, workerproto.MaxMetricsBytes)
	if err != nil {
		t.Fatalf("no final metrics: %v", err)
	}
	if m, err := workerproto.ParseMetrics(b); err != nil || m.Streams[0].Emitted != 3 {
		t.Fatalf("final metrics %+v, %v", m, err)
	}
}

func TestRunReturnsTheBodysError(t *testing.T) {
	_, getenv := files(t)
	w, err := New(Config{Getenv: getenv, Handler: slog.DiscardHandler})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := w.Run(t.Context(), func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
}

// A bad stream or component name, or more streams than a metrics file
// holds, leaves those rows out and the rest reported: the file keeps being
// written.
func TestBadNamesAndTooManyStreamsKeepMetricsFlowing(t *testing.T) {
	p, getenv := files(t)
	var logs bytes.Buffer
	w, err := New(Config{Getenv: getenv, Handler: slog.NewTextHandler(&logs, nil)})
	if err != nil {
		t.Fatal(err)
	}
	split := w.Bolt("split")
	split.Stream("default").Execute(time.Millisecond)
	split.Stream("").Execute(0)
	split.Stream("bad\x01id").Execute(0)
	w.Spout("").Stream("default").Emit(1)
	w.Spout(strings.Repeat("x", workerproto.MaxNameBytes+1)).Stream("default").Emit(1)
	w.flushMetrics()
	m, err := readMetricsFile(p)
	if err != nil {
		t.Fatalf("bad names stop the metrics: %v\n%s", err, &logs)
	}
	if len(m.Streams) != 1 || m.Streams[0].Stream != "default" || m.Streams[0].Executed != 1 {
		t.Fatalf("rows %+v, want only split's default", m.Streams)
	}
	if n := strings.Count(logs.String(), "not reported"); n != 4 {
		t.Errorf("%d warnings about bad names, want 4:\n%s", n, &logs)
	}

	// Far more streams than 256 KiB holds: the quietest are left out.
	for i := range 3000 {
		split.Stream(fmt.Sprintf("%04d-%s", i, strings.Repeat("s", 200))).Emit(uint64(i))
	}
	w.flushMetrics()
	m, err = readMetricsFile(p)
	if err != nil {
		t.Fatalf("too many streams stop the metrics: %v", err)
	}
	kept := map[string]bool{}
	for _, r := range m.Streams {
		kept[r.Stream[:min(4, len(r.Stream))]] = true
	}
	if len(m.Streams) < 100 || len(m.Streams) >= 3001 || !kept["2999"] || kept["0000"] {
		t.Fatalf("%d rows kept (the busiest 2999: %v, the quietest 0000: %v)", len(m.Streams), kept["2999"], kept["0000"])
	}
	if !strings.Contains(logs.String(), "left out the quietest") {
		t.Errorf("no warning about rows left out:\n%s", &logs)
	}
}

func readMetricsFile(p workerproto.Worker) (workerproto.Metrics, error) {
	b, _, err := workerproto.ReadFile(p.MetricsFile, workerproto.MaxMetricsBytes)
	if err != nil {
		return workerproto.Metrics{}, err
	}
	return workerproto.ParseMetrics(b)
}
