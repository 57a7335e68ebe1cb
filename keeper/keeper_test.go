package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/keeper"
)

// The test binary is the keepers' binary too, as the supervisor's is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == keeper.Command {
		os.Exit(keeper.Main(os.Stdin, os.Stderr))
	}
	os.Exit(m.Run())
}

// kept is a keeper started by a test: its process, its socket, the
// worker's log.
type kept struct {
	t      *testing.T
	proc   *os.Process
	socket string
	log    string
	dir    string
}

// keep starts a keeper of a shell script as the worker, with bound.
func keep(t *testing.T, script string, bound time.Duration) *kept {
	t.Helper()
	return keepIn(t, t.TempDir(), script, bound)
}

// keepIn is keep with the socket, the log and the worker's files in dir.
func keepIn(t *testing.T, dir, script string, bound time.Duration) *kept {
	t.Helper()
	k := &kept{t: t, socket: filepath.Join(dir, "k.sock"), log: filepath.Join(dir, "worker.log"), dir: dir}
	out, err := os.Create(k.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	l := keeper.Launch{Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"},
		Socket: k.socket, BoundMs: bound.Milliseconds(), GraceMs: 200, State: []byte(`{"mine":1}`)}
	k.proc, err = keeper.Start(os.Args[0], l, out, out)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = k.proc.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = k.proc.Kill()
		<-done
	})
	return k
}

func (k *kept) dial() *keeper.Conn {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.t.Context(), 5*time.Second)
	defer cancel()
	c, err := keeper.Dial(ctx, k.socket)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond under a deadline (testcluster.WaitFor).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testcluster.WaitFor(t, d, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// exitOf waits for c's exit.
func exitOf(t *testing.T, c *keeper.Conn) *keeper.Exit {
	t.Helper()
	select {
	case e, ok := <-c.Exits():
		if !ok {
			t.Fatal("the connection ended without an exit")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10 s")
	}
	return nil
}

// A worker's end reaches the supervisor connected, with its status; once
// released the keeper goes.
func TestExitIsReportedThenTheKeeperGoes(t *testing.T) {
	k := keep(t, "exit 3", time.Minute)
	c := k.dial()
	if h := c.Hello(); h.Version != keeper.Version || h.Pid <= 0 || string(h.State) != `{"mine":1}` {
		t.Fatalf("hello %+v", h)
	}
	e := exitOf(t, c)
	if e.Code == nil || *e.Code != 3 {
		t.Fatalf("exit %v, want status 3", e)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the keeper to go", func() bool { return !alive(k.proc.Pid) || zombie(k.proc.Pid) })
	if _, err := os.Stat(k.socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// A supervisor that goes and comes back within the bound finds the same
// worker running: same pid, no exit.
func TestWorkerOutlivesItsSupervisor(t *testing.T) {
	k := keep(t, "exec sleep 60", 2*time.Second)
	first := k.dial()
	pid := first.Hello().Pid
	first.Close() // the supervisor stops
	again := k.dial()
	if h := again.Hello(); h.Pid != pid || h.Exit != nil || !alive(pid) {
		t.Fatalf("adopted %+v; want pid %d running", h, pid)
	}
	// Pinged, it outlives several bounds.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if err := again.Ping(); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-again.Exits():
			t.Fatalf("the worker ended while pinged: %v", e)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !alive(pid) {
		t.Fatal("the worker died while its supervisor pinged")
	}
}

// No supervisor within the bound: the worker is stopped (SIGTERM before
// the bound) and gone by the bound, and so is the keeper.
func TestBoundEndsAWorkerNobodyAdopts(t *testing.T) {
	const bound = time.Second
	k := keep(t, "exec sleep 60", bound)
	c := k.dial()
	pid := c.Hello().Pid
	c.Close()
	left := time.Now()
	waitFor(t, 5*time.Second, "the worker to be ended", func() bool { return !alive(pid) || zombie(pid) })
	if took := time.Since(left); took > bound+500*time.Millisecond {
		t.Fatalf("worker ended %v after its supervisor left; bound %v", took, bound)
	}
	waitFor(t, 5*time.Second, "the keeper to go", func() bool { return !alive(k.proc.Pid) || zombie(k.proc.Pid) })
}

// Stop ends a worker that ignores SIGTERM with SIGKILL after the grace;
// the children in its process group go too.
func TestStopKillsTheWholeGroup(t *testing.T) {
	k := keep(t, `trap "" TERM; sleep 60 & echo $! > child; wait`, time.Minute)
	c := k.dial()
	var child int
	waitFor(t, 5*time.Second, "the worker's child", func() bool {
		b, err := os.ReadFile(filepath.Join(k.dir, "child"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && child > 0
	})
	if err := c.Stop(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if e := exitOf(t, c); e.Signal != syscall.SIGKILL.String() {
		t.Fatalf("exit %v, want killed", e)
	}
	waitFor(t, 5*time.Second, "the child to be gone", func() bool { return !alive(child) || zombie(child) })
}

// Signal reaches the worker (the worker protocol's SIGUSR1).
func TestSignalReachesTheWorker(t *testing.T) {
	k := keep(t, `trap "echo got > usr1" USR1; echo > ready; while :; do sleep 0.05; done`, time.Minute)
	c := k.dial()
	// Not before it traps the signal: SIGUSR1 would end it (the worker
	// protocol sends it only to a process that catches it).
	waitFor(t, 10*time.Second, "the worker to trap SIGUSR1", func() bool {
		_, err := os.Stat(filepath.Join(k.dir, "ready"))
		return err == nil
	})
	waitFor(t, 10*time.Second, "the signal to reach the worker", func() bool {
		_ = c.Signal(syscall.SIGUSR1)
		_, err := os.Stat(filepath.Join(k.dir, "usr1"))
		return err == nil
	})
}

// A newer connection replaces the older: the older hears nothing more.
func TestANewSupervisorReplacesTheOld(t *testing.T) {
	k := keep(t, "exec sleep 60", time.Minute)
	old := k.dial()
	k.dial()
	select {
	case e, ok := <-old.Exits():
		if ok {
			t.Fatalf("the replaced connection got an exit: %v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the replaced connection was not closed")
	}
}

// A keeper that dies takes its worker along (the parent-death signal).
func TestWorkerDiesWithItsKeeper(t *testing.T) {
	k := keep(t, "exec sleep 60", time.Minute)
	pid := k.dial().Hello().Pid
	if err := k.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the worker to die with its keeper", func() bool { return !alive(pid) || zombie(pid) })
}

// A socket whose path is longer than a Unix socket's address may hold
// (a long storm.local.dir) is bound and reached all the same.
func TestALongSocketPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	k := keepIn(t, dir, "exec sleep 60", time.Minute)
	if len(k.socket) <= 107 {
		t.Fatalf("socket path of %d bytes: the test proves nothing", len(k.socket))
	}
	if pid := k.dial().Hello().Pid; !alive(pid) {
		t.Fatalf("worker %d not running", pid)
	}
}

// A worker that cannot start is an error from Start, with the reason.
func TestStartSaysWhyTheWorkerDidNotStart(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	_, err = keeper.Start(os.Args[0], keeper.Launch{Path: filepath.Join(dir, "nothing"), Argv: []string{"nothing"},
		Socket: filepath.Join(dir, "k.sock"), BoundMs: 1000}, out, out)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Start of a missing program: %v", err)
	}
	if _, err := keeper.Start(os.Args[0], keeper.Launch{Path: "/bin/true", Argv: []string{"true"}, Socket: filepath.Join(dir, "k2.sock")}, out, out); err == nil {
		t.Fatal("a launch without a bound was accepted")
	}
}

// zombie reports whether pid has ended and not been reaped yet (its parent,
// a keeper that went, is init's by then).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
