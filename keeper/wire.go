package keeper

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Command is the argument that makes a supervisor's binary a keeper.
const Command = "keep-worker"

// Version is the protocol a keeper speaks (Hello.Version).
const Version = 1

// Launch is what a keeper is started with, on its stdin.
type Launch struct {
	Path       string          `json:"path"` // the program, resolved
	Argv       []string        `json:"argv"`
	Dir        string          `json:"dir"`
	Env        []string        `json:"env"`
	Credential *Credential     `json:"credential,omitempty"` // whom the worker runs as; nil: the keeper's user
	Socket     string          `json:"socket"`
	BoundMs    int64           `json:"bound_ms"` // the adoption bound
	GraceMs    int64           `json:"grace_ms"` // SIGTERM to SIGKILL when the keeper ends the worker itself
	State      json.RawMessage `json:"state,omitempty"`
	Output     *Output         `json:"output,omitempty"` // where the keeper writes the worker's output; nil: file 4
}

// Credential is a user the worker runs as.
type Credential struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// check says what a Launch lacks.
func (l *Launch) check() error {
	switch {
	case l.Path == "" || len(l.Argv) == 0:
		return fmt.Errorf("keeper: launch: no program")
	case l.Socket == "":
		return fmt.Errorf("keeper: launch: no socket")
	case l.BoundMs <= 0:
		return fmt.Errorf("keeper: launch: bound_ms %d, want > 0", l.BoundMs)
	case l.GraceMs < 0:
		return fmt.Errorf("keeper: launch: grace_ms %d, want >= 0", l.GraceMs)
	case l.Output != nil:
		return l.Output.check()
	}
	return nil
}

// Hello is what a keeper says on every connection.
type Hello struct {
	Version       int             `json:"version"`
	Pid           int             `json:"pid"` // the worker's
	StartedUnixMs int64           `json:"started_unix_ms"`
	Exit          *Exit           `json:"exit,omitempty"` // set once the worker ended
	State         json.RawMessage `json:"state,omitempty"`
}

// Exit is how the worker ended: its exit status, or the signal that ended
// it.
type Exit struct {
	Code   *int   `json:"code,omitempty"`
	Signal string `json:"signal,omitempty"`
	UnixMs int64  `json:"unix_ms"`
}

// String says how it ended, as a log or an error would.
func (e *Exit) String() string {
	switch {
	case e == nil:
		return "running"
	case e.Code != nil:
		return fmt.Sprintf("exit status %d", *e.Code)
	default:
		return "signal: " + e.Signal
	}
}

// exitOf is the Exit of a wait status.
func exitOf(ws syscall.WaitStatus, unixMs int64) *Exit {
	if ws.Signaled() {
		return &Exit{Signal: ws.Signal().String(), UnixMs: unixMs}
	}
	code := ws.ExitStatus()
	return &Exit{Code: &code, UnixMs: unixMs}
}

// event is one line a keeper sends.
type event struct {
	Hello *Hello `json:"hello,omitempty"`
	Exit  *Exit  `json:"exit,omitempty"`
}

// The requests a supervisor sends.
const (
	opPing    = "ping"    // I am here: count the bound again
	opSignal  = "signal"  // send Signal to the worker, if it still runs
	opStop    = "stop"    // end the worker: SIGTERM, SIGKILL after GraceMs
	opRelease = "release" // the exit was heard: the keeper may go
	opNote    = "note"    // write Text, a line, into the worker's log
)

// MaxNote bounds a note's bytes: its request, each byte JSON-escaped to
// at most six, must fit a request line (maxLine).
const MaxNote = 600

// noteLine is line as a note: one line, valid UTF-8, at most MaxNote
// bytes.
func noteLine(line string) string {
	line = strings.ToValidUTF8(line, "\uFFFD")
	line = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, line)
	if len(line) > MaxNote {
		cut := MaxNote
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut]
	}
	return line
}

// request is one line a supervisor sends.
type request struct {
	Op      string `json:"op"`
	Signal  int    `json:"signal,omitempty"`
	GraceMs int64  `json:"grace_ms,omitempty"`
	Text    string `json:"text,omitempty"` // a note's
}
