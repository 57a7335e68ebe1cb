package supervisor

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// metricsWorker is a worker with its files prepared in a temporary
// directory, logging into the returned buffer.
func metricsWorker(t *testing.T) (*worker, *bytes.Buffer) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "wc-1-6700")
	var logs bytes.Buffer
	w := &worker{spec: workerSpec{Dir: dir, Executors: "sentence[1-1],split[2-3]"}, topoStatus: workerproto.Active, state: &clusterv1.WorkerState{},
		log: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := w.prepareFiles(nil); err != nil {
		t.Fatal(err)
	}
	return w, &logs
}

func writeMetricsFile(t *testing.T, w *worker, emitted uint64) {
	t.Helper()
	p := workerproto.Worker{MetricsFile: metricsPath(w.spec.Dir)}
	if err := p.WriteMetrics(workerproto.Metrics{StartedUnixMs: 1, TakenUnixMs: 2, Streams: []workerproto.StreamCounts{
		{Component: "sentence", Stream: "default", Kind: workerproto.KindSpout, Executors: 1, Emitted: emitted},
	}}); err != nil {
		t.Fatal(err)
	}
}

func emittedOf(t *testing.T, w *worker) uint64 {
	t.Helper()
	m := w.lastMetrics()
	if m == nil || len(m.GetStreams()) != 1 {
		t.Fatalf("metrics %v, want one stream", m)
	}
	return m.GetStreams()[0].GetEmitted()
}

func TestPollMetrics(t *testing.T) {
	w, logs := metricsWorker(t)
	w.pollMetrics()
	if m := w.lastMetrics(); m != nil {
		t.Fatalf("a worker that wrote nothing has metrics %v, want none (not zeros)", m)
	}
	fi, err := os.Stat(filepath.Join(w.spec.Dir, workerproto.MetricsDirName))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("metrics dir: %v, %v; want 0700", fi, err)
	}

	writeMetricsFile(t, w, 7)
	w.pollMetrics()
	if n := emittedOf(t, w); n != 7 {
		t.Fatalf("emitted %d, want 7", n)
	}
	writeMetricsFile(t, w, 9)
	w.pollMetrics()
	if n := emittedOf(t, w); n != 9 {
		t.Fatalf("emitted %d, want 9", n)
	}

	// Bad files: each is named in the log once, and the last good counts stand.
	path := metricsPath(w.spec.Dir)
	bad := map[string]func(){
		"not JSON": func() { os.WriteFile(path+".x", []byte("{"), 0o600); os.Rename(path+".x", path) },
		"too large": func() {
			os.WriteFile(path+".x", []byte(strings.Repeat(" ", workerproto.MaxMetricsBytes+1)), 0o600)
			os.Rename(path+".x", path)
		},
		"a symbolic link": func() {
			os.Remove(path)
			os.Symlink("/etc/passwd", path)
		},
	}
	for name, write := range bad {
		before := logs.Len()
		write()
		w.pollMetrics()
		w.pollMetrics()
		if n := emittedOf(t, w); n != 9 {
			t.Errorf("%s: emitted %d, want the last good 9", name, n)
		}
		if got := strings.Count(logs.String()[before:], "ignoring the worker's metrics file"); got != 1 {
			t.Errorf("%s: logged %d times, want once:\n%s", name, got, logs.String()[before:])
		}
		os.Remove(path)
	}

	// A file of another owner (a hard link to someone else's) is not the worker's.
	writeMetricsFile(t, w, 11)
	w.statusMu.Lock()
	w.owner = &account{Name: "other", UID: uint32(os.Geteuid()) + 1}
	w.statusMu.Unlock()
	w.pollMetrics()
	if n := emittedOf(t, w); n != 9 {
		t.Errorf("another owner's file read: emitted %d", n)
	}
	if !strings.Contains(logs.String(), "not the worker's") {
		t.Errorf("the owner refusal is not logged:\n%s", logs)
	}

	// The next start forgets the last run's counts.
	w.statusMu.Lock()
	w.owner = nil
	w.statusMu.Unlock()
	if err := w.prepareFiles(nil); err != nil {
		t.Fatal(err)
	}
	w.pollMetrics()
	if m := w.lastMetrics(); m != nil {
		t.Fatalf("a new run has the last run's metrics %v", m)
	}
}

func TestPollMetricsCutsAWorkerToItsBudget(t *testing.T) {
	w, _ := metricsWorker(t)
	var executors []string
	for i := range 50 {
		executors = append(executors, fmt.Sprintf("c%s[%d-%d]", strings.Repeat("x", i), i+1, i+1))
	}
	w.spec.Executors = strings.Join(executors, ",")
	m := workerproto.Metrics{StartedUnixMs: 1, TakenUnixMs: 2}
	for i := range 2000 {
		m.Streams = append(m.Streams, workerproto.StreamCounts{Component: "c" + strings.Repeat("x", i%50), Stream: "stream-" + string(rune('a'+i%26)) + strings.Repeat("y", i/26),
			Kind: workerproto.KindBolt, Executed: uint64(i)})
	}
	if err := (workerproto.Worker{MetricsFile: metricsPath(w.spec.Dir)}).WriteMetrics(m); err != nil {
		t.Fatal(err)
	}
	w.pollMetrics()
	got := w.lastMetrics()
	if got == nil || got.GetDroppedStreams() == 0 {
		t.Fatalf("metrics %v, want some streams dropped", got)
	}
	if n := len(got.GetStreams()); n == 0 || n > 200 {
		t.Fatalf("%d rows carried", n)
	}
}

func writeRows(t *testing.T, w *worker, started int64, rows ...workerproto.StreamCounts) {
	t.Helper()
	p := workerproto.Worker{MetricsFile: metricsPath(w.spec.Dir)}
	if err := p.WriteMetrics(workerproto.Metrics{StartedUnixMs: started, TakenUnixMs: started + 1, Streams: rows}); err != nil {
		t.Fatal(err)
	}
}

func namedStreams(component string, from, n int) []workerproto.StreamCounts {
	var rows []workerproto.StreamCounts
	for i := from; i < from+n; i++ {
		rows = append(rows, workerproto.StreamCounts{Component: component, Stream: fmt.Sprintf("s%04d", i), Kind: workerproto.KindBolt, Executed: 1})
	}
	return rows
}

// What a worker writes reaches /supervisors/<id>, which anyone may read:
// only rows of the components STORM_EXECUTORS gives it, and at most
// maxStreamNames stream names in a run, the rest folded into their
// component's row.
func TestPollMetricsCarriesOnlyAssignedNames(t *testing.T) {
	w, _ := metricsWorker(t)
	writeRows(t, w, 1,
		workerproto.StreamCounts{Component: "sentence", Stream: "default", Kind: workerproto.KindSpout, Emitted: 5},
		workerproto.StreamCounts{Component: "jdbc:postgresql", Stream: "password=hunter2", Kind: workerproto.KindBolt, Executed: 7})
	w.pollMetrics()
	m := w.lastMetrics()
	if len(m.GetStreams()) != 1 || m.GetStreams()[0].GetComponent() != "sentence" || m.GetDroppedStreams() != 1 {
		t.Fatalf("metrics %v, want only sentence's row and one stream dropped", m)
	}

	writeRows(t, w, 1, namedStreams("split", 0, maxStreamNames+10)...)
	w.pollMetrics()
	m = w.lastMetrics()
	named, executed := 0, uint64(0)
	for _, r := range m.GetStreams() {
		if r.GetStream() != "" {
			named++
		}
		executed += r.GetExecuted()
	}
	if named != maxStreamNames || executed != maxStreamNames+10 {
		t.Fatalf("%d names carried, %d executed; want %d names and all %d counts", named, executed, maxStreamNames, maxStreamNames+10)
	}
	// New names later in the run are folded: the names are bounded per run.
	writeRows(t, w, 1, namedStreams("split", 1000, 5)...)
	w.pollMetrics()
	for _, r := range w.lastMetrics().GetStreams() {
		if r.GetStream() != "" {
			t.Fatalf("a new name %q carried after the run's %d", r.GetStream(), maxStreamNames)
		}
	}
	// A new run has its own names.
	if err := w.prepareFiles(nil); err != nil {
		t.Fatal(err)
	}
	writeRows(t, w, 2, namedStreams("split", 1000, 5)...)
	w.pollMetrics()
	if n := len(w.lastMetrics().GetStreams()); n != 5 {
		t.Fatalf("a new run carries %d rows, want its 5 names", n)
	}
}

// A stream the heartbeat's budget folded stays folded for the rest of the
// run, even in a heartbeat with room for it.
func TestFoldedStreamsStayFoldedForTheRun(t *testing.T) {
	w, _ := metricsWorker(t)
	writeRows(t, w, 1, namedStreams("split", 0, 20)...)
	w.pollMetrics()
	full := w.lastMetrics()
	workers := []*clusterv1.WorkerState{{Port: 6700, Metrics: full}}
	capMetrics(workers, []fitFunc{w.fitMetrics}, proto.Size(full)-100)
	folded := workers[0].GetMetrics()
	if len(folded.GetStreams()) == 20 {
		t.Fatal("nothing folded under a smaller budget")
	}
	writeRows(t, w, 1, namedStreams("split", 0, 20)...)
	w.pollMetrics()
	again := w.lastMetrics()
	if got, want := streamNames(again), streamNames(folded); !slices.Equal(got, want) {
		t.Errorf("with room again the rows are %v, want the folded ones %v", got, want)
	}
}

func streamNames(m *clusterv1.WorkerMetrics) []string {
	var out []string
	for _, r := range m.GetStreams() {
		out = append(out, r.GetComponent()+"/"+r.GetStream())
	}
	return out
}
