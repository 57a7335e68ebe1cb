package supervisor

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

func TestProtoStatus(t *testing.T) {
	for in, want := range map[clusterv1.TopologyStatus]workerproto.Status{
		clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE:      workerproto.Active,
		clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:    workerproto.Inactive,
		clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING: workerproto.Inactive,
		clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED:      workerproto.Killed,
	} {
		if got, ok := protoStatus(in); !ok || got != want {
			t.Errorf("protoStatus(%v) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := protoStatus(clusterv1.TopologyStatus_TOPOLOGY_STATUS_UNSPECIFIED); ok {
		t.Error("an unspecified status must keep the last known")
	}
}

func TestWriteStatusIsAtomicAndReadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wc-1-6700")
	if err := prepareDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	for _, st := range []workerproto.Status{workerproto.Active, workerproto.Inactive, workerproto.Killed} {
		if err := writeStatus(dir, st, nil); err != nil {
			t.Fatal(err)
		}
		got, err := workerproto.Worker{StatusFile: filepath.Join(dir, workerproto.StatusFileName)}.Status()
		if err != nil || got != st {
			t.Fatalf("status file says %q (%v), want %q", got, err, st)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %v, want only the status file (no temporaries left)", entries)
	}
	fi, _ := os.Stat(filepath.Join(dir, workerproto.StatusFileName))
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("status file mode %v", fi.Mode())
	}
}

func TestPrepareDirRefusesASymlink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "wc-1-6700")
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	if err := prepareDir(dir, nil); err == nil {
		t.Fatal("prepareDir followed a symlink")
	}
}

func TestReadReported(t *testing.T) {
	dir := t.TempDir()
	if err := resetErrors(dir, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, workerproto.ErrorFileName)
	w := workerproto.Worker{ErrorFile: path}
	if _, _, next, ok := readReported(path, 0); ok || next != 0 {
		t.Fatalf("empty file reported %v, next %d", ok, next)
	}
	_ = w.ReportError("first")
	_ = w.ReportError("second")
	line, at, next, ok := readReported(path, 0)
	if !ok || line != "second" || next != int64(len("first\nsecond\n")) || time.Since(at) > time.Minute {
		t.Fatalf("got %q at %v, next %d, %v", line, at, next, ok)
	}
	if _, _, again, ok := readReported(path, next); ok || again != next {
		t.Fatal("the same line was reported twice")
	}
	// A partial line waits for its end.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString("thi")
	if _, _, n, ok := readReported(path, next); ok || n != next {
		t.Fatal("a partial line was reported")
	}
	_, _ = f.WriteString("rd\n")
	f.Close()
	if line, _, _, ok := readReported(path, next); !ok || line != "third" {
		t.Fatalf("got %q, %v", line, ok)
	}
	// Emptied by the worker: read from the start again.
	_ = os.Truncate(path, 0)
	_ = w.ReportError("fourth")
	if line, _, _, ok := readReported(path, next); !ok || line != "fourth" {
		t.Fatalf("after truncation got %q, %v", line, ok)
	}
	// A new start empties it.
	if err := resetErrors(dir, nil); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("reset left %d bytes, mode %v", fi.Size(), fi.Mode())
	}
}

// A reported error's text goes to the worker's log, through its keeper
// (keeper's tests; integration's leaky worker); the heartbeat, which
// anyone reads in ZooKeeper, says only that there was one, and when. The
// supervisor never writes the log itself: without a keeper the text is
// not written.
func TestPollErrorsKeepsTheTextOutOfTheHeartbeat(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "worker.log")
	if err := os.WriteFile(log, []byte("output\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	w := &worker{spec: workerSpec{Dir: dir, LogPath: log}, state: &clusterv1.WorkerState{}, log: slog.New(slog.DiscardHandler)}
	if err := resetErrors(dir, nil); err != nil {
		t.Fatal(err)
	}
	w.pollErrors()
	if w.status().GetLastError() != "" {
		t.Fatal("an empty file set an error")
	}
	_ = workerproto.Worker{ErrorFile: filepath.Join(dir, workerproto.ErrorFileName)}.ReportError("bad tuple password=hunter2")
	w.pollErrors()
	if s := w.status(); s.GetLastError() != reportedErrorText || s.GetLastErrorUnixMs() == 0 {
		t.Fatalf("state %v", s)
	}
	if b, _ := os.ReadFile(log); string(b) != "output\n" {
		t.Fatalf("the supervisor wrote the log itself: %q", b)
	}
}

func TestSetTopologyStatusSignalsOnlyACatchingWorker(t *testing.T) {
	// This process catches SIGUSR1 while subscribed; sh does not.
	if catches(os.Getpid(), syscall.SIGUSR2) {
		t.Skip("this process already catches SIGUSR2")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, workerproto.StatusSignal)
	defer signal.Stop(sig)
	if !catches(os.Getpid(), workerproto.StatusSignal) {
		t.Fatal("catches: false for a process subscribed to SIGUSR1")
	}
	sh := exec.Command("sleep", "30")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sh.Process.Kill(); _ = sh.Wait() }()
	if catches(sh.Process.Pid, workerproto.StatusSignal) {
		t.Fatal("catches: true for sleep")
	}

	dir := filepath.Join(t.TempDir(), "wc-1-6700")
	w := &worker{spec: workerSpec{Dir: dir}, topoStatus: workerproto.Active, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		state: &clusterv1.WorkerState{Pid: int32(os.Getpid())}}
	w.setTopologyStatus(workerproto.Inactive) // before the first start: recorded only
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("status written before the worker's files were prepared: %v", err)
	}
	if err := w.prepareFiles(nil); err != nil {
		t.Fatal(err)
	}
	read := workerproto.Worker{StatusFile: filepath.Join(dir, workerproto.StatusFileName)}
	if st, _ := read.Status(); st != workerproto.Inactive {
		t.Fatalf("first start wrote %q", st)
	}
	w.setTopologyStatus(workerproto.Killed)
	select {
	case <-sig:
	case <-time.After(10 * time.Second):
		t.Fatal("no SIGUSR1 after the change")
	}
	if st, _ := read.Status(); st != workerproto.Killed {
		t.Fatalf("status file says %q", st)
	}

	w.state.Pid = int32(sh.Process.Pid) // sleep would die of it
	w.setTopologyStatus(workerproto.Active)
	if err := sh.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("sleep was killed: %v", err)
	}
}
