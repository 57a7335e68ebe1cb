package keeper

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Output is where a keeper writes its worker's stdout and stderr itself:
// the worker writes to a pipe, and the keeper copies what it reads into
// Path, rotating by size. Because the keeper, not the supervisor, holds
// the pipe, a supervisor that restarts loses no line and doubles none.
// Without an Output (an older supervisor's Launch) the worker writes to
// the keeper's file 4 directly.
type Output struct {
	Path     string `json:"path"`      // the current file, e.g. .../worker.log
	MaxBytes int64  `json:"max_bytes"` // the current file is rotated once it would pass this
	Keep     int    `json:"keep"`      // rotated files kept: Path.1, the newest, to Path.<Keep>
	GID      int    `json:"gid"`       // the files' group; -1: the keeper's own
	Mode     uint32 `json:"mode"`      // the files' permission bits
}

// check says what an Output lacks.
func (o *Output) check() error {
	switch {
	case o.Path == "":
		return fmt.Errorf("keeper: launch: output: no path")
	case o.MaxBytes <= 0:
		return fmt.Errorf("keeper: launch: output: max_bytes %d, want > 0", o.MaxBytes)
	case o.Keep < 0:
		return fmt.Errorf("keeper: launch: output: keep %d, want >= 0", o.Keep)
	case o.Mode&^0o777 != 0:
		return fmt.Errorf("keeper: launch: output: mode %#o has bits beyond 0777", o.Mode)
	}
	return nil
}

// RotatedPath is the n-th rotated file of the log at path (n >= 1; 1 is
// the newest), named as Storm names a worker's rotated logs without
// compression: worker.log.1, worker.log.2, ...
func RotatedPath(path string, n int) string { return path + "." + strconv.Itoa(n) }

// rotator writes to an Output's files. Only the copying goroutine uses it.
type rotator struct {
	o    Output
	f    *os.File
	size int64
}

// openOutput opens o's current file for appending (a restarted worker's
// run continues it), rotating it first if it is full.
func openOutput(o Output) (*rotator, error) {
	r := &rotator{o: o}
	if err := r.open(); err != nil {
		return nil, err
	}
	if r.size >= o.MaxBytes {
		if err := r.rotate(); err != nil {
			r.f.Close()
			return nil, err
		}
	}
	return r, nil
}

// open opens the current file, refusing a symlink in its place, with the
// Output's group and mode whatever umask and an earlier owner left.
func (r *rotator) open() error {
	f, err := os.OpenFile(r.o.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, os.FileMode(r.o.Mode))
	if err != nil {
		return err
	}
	if r.o.GID >= 0 {
		if err := f.Chown(-1, r.o.GID); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Chmod(os.FileMode(r.o.Mode)); err != nil {
		f.Close()
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// rotate shifts Path.i to Path.i+1 (the oldest, Path.<Keep>, is
// replaced), Path to Path.1, and starts Path again, empty.
func (r *rotator) rotate() error {
	r.f.Close()
	if r.o.Keep == 0 {
		if err := os.Remove(r.o.Path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return r.open()
	}
	for i := r.o.Keep - 1; i >= 1; i-- {
		if err := os.Rename(RotatedPath(r.o.Path, i), RotatedPath(r.o.Path, i+1)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Rename(r.o.Path, RotatedPath(r.o.Path, 1)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return r.open()
}

// Write writes p, rotating at a line's end when the current file would
// pass MaxBytes: a line is cut in two only when it is longer than a file
// may be.
func (r *rotator) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		room := r.o.MaxBytes - r.size
		if int64(len(p)) <= room {
			n, err := r.f.Write(p)
			r.size += int64(n)
			return written + n, err
		}
		cut := int64(0) // what of p goes before the rotation
		if room > 0 {
			if i := bytes.LastIndexByte(p[:room], '\n'); i >= 0 {
				cut = int64(i) + 1
			} else if r.size == 0 {
				cut = room // one line longer than a file
			}
		}
		if cut > 0 {
			n, err := r.f.Write(p[:cut])
			r.size += int64(n)
			written += n
			if err != nil {
				return written, err
			}
			p = p[cut:]
		}
		if err := r.rotate(); err != nil {
			return written, err
		}
	}
	return written, nil
}

func (r *rotator) Close() error { return r.f.Close() }

// logWriter is the one writer of a worker's log: the worker's output
// (Write, from the copying goroutine) and the supervisor's notes (Note,
// from run), through one rotator, so both count towards its size. A note
// goes at a line's end: while the worker is half way through a line, it
// waits for the line to end.
type logWriter struct {
	mu      sync.Mutex
	r       *rotator
	midLine bool     // the worker's last byte written ended no line
	ended   bool     // the worker's output ended
	dropped bool     // the worker's output is dropped from now on (dropOutput)
	pending [][]byte // notes waiting for the worker's line to end
	held    int      // their bytes
}

// maxPending bounds the notes held for a line that does not end; more
// are dropped.
const maxPending = 64 << 10

// Write writes the worker's output p, and the notes held once the line
// they wait for ends.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	if l.dropped {
		return n, nil
	}
	if len(l.pending) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			_, err := l.r.Write(p)
			return n, err
		}
		if _, err := l.r.Write(p[:i+1]); err != nil {
			return n, err
		}
		l.midLine = false
		l.writeNotes()
		p = p[i+1:]
	}
	if len(p) == 0 {
		return n, nil
	}
	l.midLine = p[len(p)-1] != '\n'
	_, err := l.r.Write(p)
	return n, err
}

// Note writes text as a line: now if no line of the worker's is half
// written, else once it ends (or the output does).
func (l *logWriter) Note(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := []byte(text + "\n")
	if l.midLine && !l.ended {
		if l.held+len(line) <= maxPending {
			l.pending, l.held = append(l.pending, line), l.held+len(line)
		}
		return
	}
	l.endLine()
	_, _ = l.r.Write(line)
}

// endOutput says the worker's output ended: the notes held are written,
// on a line of their own.
func (l *logWriter) endOutput() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	if len(l.pending) > 0 {
		l.endLine()
		l.writeNotes()
	}
}

// dropOutput drops what the worker's output still brings: its exit was
// reported, and the next run's keeper may write the log now.
func (l *logWriter) dropOutput() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropped, l.ended = true, true
	if len(l.pending) > 0 {
		l.endLine()
		l.writeNotes()
	}
}

// endLine ends a line the output left half written, so that what comes
// next starts a line of its own. Called with mu held.
func (l *logWriter) endLine() {
	if l.midLine {
		_, _ = l.r.Write([]byte("\n"))
		l.midLine = false
	}
}

// writeNotes writes the notes held. Called with mu held.
func (l *logWriter) writeNotes() {
	for _, line := range l.pending {
		_, _ = l.r.Write(line)
	}
	l.pending, l.held = nil, 0
}

func (l *logWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Close()
}

// copyOutput copies what the worker writes on src into w until the worker
// and every process holding the pipe closed it, then closes src and says
// that the output ended; done is closed at the end. A write that fails
// drops what it held, and the copy goes on: a full disk must not block
// the worker on its pipe.
func copyOutput(src io.ReadCloser, w *logWriter, done chan<- struct{}) {
	defer close(done)
	defer src.Close()
	defer w.endOutput()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// drainWait is how long a keeper waits for the worker's last output to
// be written before it reports the worker's exit: the worker's group is
// dead by then, so its pipe ends at once unless a process that left the
// group holds it.
const drainWait = 2 * time.Second
