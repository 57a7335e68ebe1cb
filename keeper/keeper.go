package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxLaunch bounds the Launch a keeper reads, and maxLine a request.
const (
	maxLaunch = 1 << 20
	maxLine   = 4 << 10
)

// Main is a keeper's whole process (see the package comment): it reads a
// Launch from stdin, starts the worker, says so on file 3, and keeps the
// worker until it ends or the adoption bound passes. It returns the exit
// code: 0 once done, 1 when the worker could not be started.
func Main(stdin io.Reader, stderr io.Writer) int {
	// The parent-death signal is sent when the thread that forked the
	// worker exits: this goroutine keeps its thread, and runs the keeper
	// to the end.
	runtime.LockOSThread()
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "keeper")
	ready, out := os.NewFile(3, "ready"), os.NewFile(4, "worker output")
	k, err := start(stdin, out, log)
	if ready != nil {
		if err != nil {
			fmt.Fprintf(ready, "%v\n", err)
		} else {
			fmt.Fprintln(ready, "ok")
		}
		ready.Close()
	}
	if err != nil {
		log.Error("cannot start the worker", "err", err)
		return 1
	}
	defer k.close()
	k.run()
	k.drain()
	return 0
}

// keeper is the process's state; run owns it.
type keeper struct {
	launch Launch
	log    *slog.Logger
	ln     *net.UnixListener
	cmd    *exec.Cmd
	pid    int
	start  time.Time

	accepted chan *peer
	requests chan peerRequest
	gone     chan *peer
	exited   chan syscall.WaitStatus
	signals  chan os.Signal

	done    chan struct{}   // closed when run ends
	copied  chan struct{}   // closed when the worker's output is all written (Launch.Output); nil without
	out     *logWriter      // the worker's log (Launch.Output); nil without
	written <-chan struct{} // after the worker ended: closed once its output is written, or drainWait passed

	peer     *peer     // the supervisor connected now, if any
	contact  time.Time // the last request received, or the start
	exit     *Exit     // how the worker ended, once it did
	reported bool      // exit is said to supervisors: its output is written
	stopKill time.Time // when a stop's grace ends; zero without a stop
	termed   bool      // SIGTERM sent
	killed   bool      // SIGKILL sent
}

// start reads the launch, binds the socket and starts the worker.
func start(stdin io.Reader, out *os.File, log *slog.Logger) (*keeper, error) {
	var l Launch
	if err := json.NewDecoder(io.LimitReader(stdin, maxLaunch)).Decode(&l); err != nil {
		return nil, fmt.Errorf("keeper: read the launch: %w", err)
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	addr, done, err := socketAddr(l.Socket)
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	done()
	if err != nil {
		return nil, fmt.Errorf("keeper: %w", err)
	}
	ln.SetUnlinkOnClose(false) // by its path, in close: addr may name another file by then
	if err := os.Chmod(l.Socket, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("keeper: %w", err)
	}
	k := &keeper{launch: l, log: log.With("socket", l.Socket), ln: ln, accepted: make(chan *peer), requests: make(chan peerRequest),
		gone: make(chan *peer), exited: make(chan syscall.WaitStatus, 1), signals: make(chan os.Signal, 1), done: make(chan struct{})}
	if out == nil {
		out = os.Stderr
	}
	if err := k.startWorker(out); err != nil {
		ln.Close()
		return nil, err
	}
	return k, nil
}

// startWorker starts the worker in a process group of its own, with the
// parent-death signal, from this locked thread, its output to out, or,
// with Launch.Output, to a pipe this keeper copies into rotated files.
func (k *keeper) startWorker(out *os.File) error {
	l := k.launch
	var rot *rotator
	var pr *os.File
	if l.Output != nil {
		var err error
		if rot, err = openOutput(*l.Output); err != nil {
			return fmt.Errorf("keeper: the worker's log: %w", err)
		}
		var pw *os.File
		if pr, pw, err = os.Pipe(); err != nil {
			rot.Close()
			return err
		}
		defer pw.Close() // the worker holds its copy
		out = pw
	}
	cmd := &exec.Cmd{Path: l.Path, Args: l.Argv, Dir: l.Dir, Env: l.Env, Stdout: out, Stderr: out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c := l.Credential; c != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	if err := cmd.Start(); err != nil {
		if rot != nil {
			rot.Close()
			pr.Close()
		}
		return err
	}
	k.cmd, k.pid, k.start, k.contact = cmd, cmd.Process.Pid, time.Now(), time.Now()
	if rot != nil {
		// Owned by the keeper's process: it ends when the worker's
		// pipe does, or with the process (drain).
		k.copied, k.out = make(chan struct{}), &logWriter{r: rot}
		go copyOutput(pr, k.out, k.copied)
	}
	return nil
}

// drain waits, a little, for the worker's last output to be written,
// when the keeper goes without having reported the worker's exit (the
// bound passed); a reported exit came after its output.
func (k *keeper) drain() {
	if k.copied == nil || k.reported {
		return
	}
	select {
	case <-k.copied:
	case <-time.After(drainWait):
		k.log.Warn("the worker's output did not end in time; some of its last lines may be lost", "wait", drainWait)
	}
}

// close releases the socket and the worker's log; the worker is gone by
// then.
func (k *keeper) close() {
	k.ln.Close()
	_ = os.Remove(k.launch.Socket)
	if k.out != nil {
		k.out.Close()
	}
}

// run keeps the worker until the keeper may go: a supervisor released its
// exit, or the bound passed after it. The goroutines it starts end with it
// (done).
func (k *keeper) run() {
	signal.Notify(k.signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(k.signals)
	defer close(k.done)
	go k.accept()
	go func() {
		_ = k.cmd.Wait()
		ws, _ := k.cmd.ProcessState.Sys().(syscall.WaitStatus)
		k.exited <- ws
	}()
	for {
		timer := time.NewTimer(time.Until(k.next()))
		select {
		case p := <-k.accepted:
			k.adopted(p)
		case r := <-k.requests:
			if r.peer == k.peer && k.handle(r.req) {
				timer.Stop()
				k.peer.close()
				return
			}
		case p := <-k.gone:
			if p == k.peer {
				k.peer = nil
			}
		case ws := <-k.exited:
			k.ended(ws)
		case <-k.written:
			k.written = nil
			k.report()
		case sig := <-k.signals:
			if sig == syscall.SIGTERM {
				k.log.Info("SIGTERM: ending the worker", "pid", k.pid)
				k.stop(time.Duration(k.launch.GraceMs) * time.Millisecond)
			}
		case <-timer.C:
			if k.due(time.Now()) {
				if k.peer != nil {
					k.peer.close()
				}
				return
			}
		}
		timer.Stop()
	}
}

// The keeper's clock: the bound counts from the last request (contact);
// the worker gets SIGTERM termBefore the bound and SIGKILL at it, or
// earlier after a stop's grace (stopKill); once it ended, the keeper waits
// for a supervisor until the bound.

func (k *keeper) bound() time.Duration { return time.Duration(k.launch.BoundMs) * time.Millisecond }

func (k *keeper) deadline() time.Time { return k.contact.Add(k.bound()) }

// termAt is when the bound has the worker stopped: SIGTERM the grace
// before the bound, at most half of it.
func (k *keeper) termAt() time.Time {
	return k.deadline().Add(-min(time.Duration(k.launch.GraceMs)*time.Millisecond, k.bound()/2))
}

// killAt is when the worker gets SIGKILL: at the bound, or at the end of a
// stop's grace if sooner.
func (k *keeper) killAt() time.Time {
	if !k.stopKill.IsZero() && k.stopKill.Before(k.deadline()) {
		return k.stopKill
	}
	return k.deadline()
}

// next is when the keeper must act next.
func (k *keeper) next() time.Time {
	switch {
	case k.exit != nil:
		return k.deadline() // no supervisor came for the exit: go
	case k.killed:
		return time.Now().Add(time.Hour) // its exit wakes the keeper
	case !k.termed && k.termAt().Before(k.killAt()):
		return k.termAt()
	}
	return k.killAt()
}

// due does what is due at now, and reports whether the keeper may go.
func (k *keeper) due(now time.Time) bool {
	switch {
	case k.exit != nil:
		if now.Before(k.deadline()) {
			return false
		}
		k.log.Warn("no supervisor came for the worker's exit within the bound; going", "exit", k.exit.String())
		return true
	case k.killed:
	case !now.Before(k.killAt()):
		if k.stopKill.IsZero() || k.deadline().Before(k.stopKill) {
			k.log.Warn("no supervisor within the adoption bound: killing the worker", "pid", k.pid, "bound", k.bound())
		}
		k.kill(syscall.SIGKILL)
		k.killed = true
	case !k.termed && !now.Before(k.termAt()):
		k.log.Warn("no supervisor for most of the adoption bound: stopping the worker", "pid", k.pid, "bound", k.bound())
		k.kill(syscall.SIGTERM)
		k.termed = true
	}
	return false
}

// stop ends the worker: SIGTERM now, SIGKILL after grace.
func (k *keeper) stop(grace time.Duration) {
	if k.exit != nil || k.killed {
		return
	}
	k.stopKill = time.Now().Add(grace)
	k.kill(syscall.SIGTERM)
	k.termed = true
}

// kill sends sig to the worker's process group, while the worker is not
// reaped (its group id cannot be another's then).
func (k *keeper) kill(sig syscall.Signal) {
	if k.exit == nil {
		_ = syscall.Kill(-k.pid, sig)
	}
}

// ended records the worker's end and kills what is left of its group;
// the supervisor is told once the worker's output is written (report).
func (k *keeper) ended(ws syscall.WaitStatus) {
	_ = syscall.Kill(-k.pid, syscall.SIGKILL) // before the exit is recorded: the group is still the worker's
	k.exit = exitOf(ws, time.Now().UnixMilli())
	k.log.Info("worker ended", "pid", k.pid, "exit", k.exit.String())
	k.written = k.outputWritten()
}

// outputWritten is closed once the worker's output is all in its log, or
// drainWait passed. Its goroutine ends with run.
func (k *keeper) outputWritten() <-chan struct{} {
	ch := make(chan struct{})
	if k.copied == nil {
		close(ch)
		return ch
	}
	go func() {
		defer close(ch)
		t := time.NewTimer(drainWait)
		defer t.Stop()
		select {
		case <-k.copied:
		case <-t.C:
		case <-k.done:
		}
	}()
	return ch
}

// report tells the supervisor the worker's exit, now that its output is
// written: the supervisor may start the next run, whose keeper writes the
// same log, as soon as it hears it. Output still coming (a process that
// left the worker's group holds its pipe past drainWait) is dropped from
// then on, so the log never has two writers.
func (k *keeper) report() {
	select {
	case <-k.copied:
	default:
		if k.out != nil {
			k.log.Warn("the worker's output did not end in time; what comes after is dropped", "wait", drainWait)
			k.out.dropOutput()
		}
	}
	k.reported = true
	if k.peer != nil {
		k.peer.send(event{Exit: k.exit})
	}
}

// adopted makes p the supervisor: the older one, if any, is dropped.
func (k *keeper) adopted(p *peer) {
	if k.peer != nil {
		k.peer.close()
	}
	k.peer, k.contact = p, time.Now()
	var exit *Exit
	if k.reported {
		exit = k.exit
	}
	p.send(event{Hello: &Hello{Version: Version, Pid: k.pid, StartedUnixMs: k.start.UnixMilli(), Exit: exit, State: k.launch.State}})
}

// handle does a request of the current supervisor, and reports whether the
// keeper may go.
func (k *keeper) handle(r request) bool {
	k.contact = time.Now()
	switch r.Op {
	case opSignal:
		if k.exit == nil && r.Signal > 0 {
			_ = syscall.Kill(k.pid, syscall.Signal(r.Signal))
		}
	case opStop:
		k.stop(time.Duration(r.GraceMs) * time.Millisecond)
	case opRelease:
		return k.reported
	case opNote:
		if k.out != nil && r.Text != "" {
			k.out.Note(noteLine(r.Text))
		}
	}
	return false
}

// accept hands every connection of the keeper's own user to run; it ends
// when the listener is closed.
func (k *keeper) accept() {
	for {
		c, err := k.ln.AcceptUnix()
		if err != nil {
			return
		}
		if err := checkPeer(c); err != nil {
			k.log.Warn("refused a connection", "err", err)
			c.Close()
			continue
		}
		p := &peer{c: c, enc: json.NewEncoder(c)}
		select {
		case k.accepted <- p:
			go p.read(k)
		case <-k.done:
			c.Close()
			return
		}
	}
}

// checkPeer accepts a peer of this process's user only.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return credErr
	}
	if cred.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("keeper: peer uid %d, not %d", cred.Uid, os.Geteuid())
	}
	return nil
}

// peer is one supervisor's connection.
type peer struct {
	c   *net.UnixConn
	enc *json.Encoder
}

type peerRequest struct {
	peer *peer
	req  request
}

// read hands p's requests to run until the connection ends, then says so.
func (p *peer) read(k *keeper) {
	sc := bufio.NewScanner(p.c)
	sc.Buffer(make([]byte, 0, 256), maxLine)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line it cannot read is no request
		}
		select {
		case k.requests <- peerRequest{p, r}:
		case <-k.done:
			return
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		k.log.Debug("supervisor connection ended", "err", err)
	}
	select {
	case k.gone <- p:
	case <-k.done:
	}
}

// send writes e; a supervisor that does not read is dropped.
func (p *peer) send(e event) {
	_ = p.c.SetWriteDeadline(time.Now().Add(time.Second))
	if err := p.enc.Encode(e); err != nil {
		p.close()
	}
}

func (p *peer) close() { p.c.Close() }
