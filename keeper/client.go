package keeper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrGone: the keeper ended without saying how its worker did (it was
// killed, say), or its socket answers no more.
var ErrGone = errors.New("keeper: gone")

// startTimeout bounds how long Start waits for a keeper to start its
// worker.
const startTimeout = 30 * time.Second

// Start starts a keeper of l from exe (a binary that runs Main when given
// Command), with out, the worker's log, for the worker's output and log,
// its own, for the keeper's, and waits until it has started the worker.
// It returns the keeper's process, to be reaped with Wait, or why the
// worker could not be started.
func Start(exe string, l Launch, out, log *os.File) (*os.Process, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	launch, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, Command)
	cmd.Stdin = bytes.NewReader(launch)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{w, out} // files 3 and 4
	cmd.Env = []string{}                // the keeper needs none; the worker's is in the launch
	// A session of its own: the supervisor's signals, its terminal's and
	// its process group's do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("keeper: %w", err)
	}
	p := cmd.Process
	said, err := readReady(r)
	if err == nil && said != "ok" {
		err = errors.New(said) // the keeper's own words: why the worker did not start
	}
	if err != nil {
		_ = p.Kill()
		_, _ = p.Wait()
		return nil, err
	}
	return p, nil
}

// readReady reads what a keeper says on its file 3, within startTimeout.
func readReady(r *os.File) (string, error) {
	_ = r.SetReadDeadline(time.Now().Add(startTimeout))
	line, err := bufio.NewReader(r).ReadString('\n')
	switch {
	case err == nil:
		return strings.TrimSuffix(line, "\n"), nil
	case errors.Is(err, io.EOF):
		return "", fmt.Errorf("keeper: ended before it started the worker")
	default:
		return "", fmt.Errorf("keeper: %w", err)
	}
}

// Conn is a supervisor's connection to one keeper. Exits delivers the
// worker's end; the other methods send a request. A Conn's goroutine ends
// with Close.
type Conn struct {
	c     *net.UnixConn
	hello Hello
	exits chan *Exit
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex // one request at a time
	enc   *json.Encoder
}

// Dial connects to the keeper at socket and reads its Hello, within ctx.
func Dial(ctx context.Context, socket string) (*Conn, error) {
	addr, done, err := socketAddr(socket)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", addr)
	done()
	if err != nil {
		return nil, err
	}
	c := nc.(*net.UnixConn)
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(deadline)
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4<<10), maxLaunch)
	var e event
	if !sc.Scan() {
		c.Close()
		return nil, fmt.Errorf("%w: no hello: %v", ErrGone, sc.Err())
	}
	if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Hello == nil {
		c.Close()
		return nil, fmt.Errorf("keeper: %s: not a hello: %q", socket, sc.Bytes())
	}
	_ = c.SetReadDeadline(time.Time{})
	k := &Conn{c: c, hello: *e.Hello, exits: make(chan *Exit, 1), done: make(chan struct{}), enc: json.NewEncoder(c)}
	if e.Hello.Exit != nil {
		k.exits <- e.Hello.Exit
	}
	go k.read(sc)
	return k, nil
}

// Hello is what the keeper said on connecting.
func (k *Conn) Hello() Hello { return k.hello }

// Exits delivers the worker's end once, then is closed when the
// connection ends; closed without an exit, the keeper is gone (ErrGone)
// or this Conn was closed.
func (k *Conn) Exits() <-chan *Exit { return k.exits }

// read delivers the exits the keeper sends until the connection ends.
func (k *Conn) read(sc *bufio.Scanner) {
	defer close(k.exits)
	sent := k.hello.Exit != nil
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Exit == nil || sent {
			continue
		}
		sent = true
		select {
		case k.exits <- e.Exit:
		case <-k.done:
			return
		}
	}
}

// Ping tells the keeper its supervisor is here: its bound counts again.
func (k *Conn) Ping() error { return k.send(request{Op: opPing}) }

// Signal sends sig to the worker, if it still runs.
func (k *Conn) Signal(sig syscall.Signal) error {
	return k.send(request{Op: opSignal, Signal: int(sig)})
}

// Stop ends the worker: SIGTERM, then SIGKILL after grace. Its end comes
// on Exits.
func (k *Conn) Stop(grace time.Duration) error {
	return k.send(request{Op: opStop, GraceMs: grace.Milliseconds()})
}

// Note hands the keeper a line for the worker's log (Launch.Output): it
// writes it at the end of the line the worker is writing, or at once if
// none is half written, and counts it towards the rotation. A line break
// in it becomes a space; it is cut at MaxNote bytes. Without an Output
// the keeper drops it.
func (k *Conn) Note(line string) error {
	return k.send(request{Op: opNote, Text: noteLine(line)})
}

// Release tells the keeper its worker's exit was heard: it goes.
func (k *Conn) Release() error { return k.send(request{Op: opRelease}) }

func (k *Conn) send(r request) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = k.c.SetWriteDeadline(time.Now().Add(time.Second))
	if err := k.enc.Encode(r); err != nil {
		return fmt.Errorf("%w: %v", ErrGone, err)
	}
	return nil
}

// Close ends the connection, and leaves the keeper to count its bound: a
// supervisor that stops closes its keepers' connections and nothing else.
func (k *Conn) Close() error {
	var err error
	k.once.Do(func() {
		close(k.done)
		err = k.c.Close()
	})
	return err
}
