package workerproto

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// The variables a supervisor sets in every worker's environment for this
// protocol, beside STORM_TOPOLOGY_ID, STORM_PORT, STORM_EXECUTORS and
// STORM_CODE_DIR.
const (
	EnvStatusFile   = "STORM_STATUS_FILE"
	EnvErrorFile    = "STORM_ERROR_FILE"
	EnvMetricsFile  = "STORM_METRICS_FILE"
	EnvLogLevelFile = "STORM_LOG_LEVEL_FILE"
)

// The files' names in a worker's directory. The metrics file is in a
// directory of its own, MetricsDirName, which the worker may write into:
// it replaces the file by renaming a temporary file over it.
const (
	StatusFileName   = "status"
	ErrorFileName    = "errors"
	LogLevelFileName = "log-levels.json"
	MetricsDirName   = "metrics"
	MetricsFileName  = "metrics.json"
)

// StatusSignal is what the supervisor sends a worker after changing its
// status file.
const StatusSignal = syscall.SIGUSR1

// MaxErrorBytes is how much of an error line the supervisor publishes.
const MaxErrorBytes = 512

// Status is what a worker should do, as its status file says.
type Status string

// The statuses.
const (
	Active   Status = "active"   // emit
	Inactive Status = "inactive" // deactivated (or rebalancing): do not emit
	Killed   Status = "killed"   // being killed: do not emit; the worker stops when the wait ends
)

// ErrBadStatus is a status file whose content is none of the statuses.
var ErrBadStatus = errors.New("workerproto: bad status")

// Emits reports whether a worker with this status emits from its spouts.
func (s Status) Emits() bool { return s == Active }

// Encode is the status file's content.
func (s Status) Encode() []byte { return []byte(string(s) + "\n") }

// ParseStatus reads a status file's content: one status, surrounding
// white space ignored.
func ParseStatus(b []byte) (Status, error) {
	switch s := Status(bytes.TrimSpace(b)); s {
	case Active, Inactive, Killed:
		return s, nil
	default:
		return "", fmt.Errorf("%w %q", ErrBadStatus, truncate(string(b), 32))
	}
}

// LastLine returns the last complete ('\n'-terminated) line in b, without
// its newline and cut to MaxErrorBytes of valid UTF-8, and how many bytes
// of b up to and including that newline there are: the caller's next read
// starts there. ok is false when b holds no complete line.
func LastLine(b []byte) (line string, consumed int, ok bool) {
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		return "", 0, false
	}
	start := bytes.LastIndexByte(b[:end], '\n') + 1
	return truncate(strings.TrimRight(string(b[start:end]), "\r"), MaxErrorBytes), end + 1, true
}

// truncate cuts s to at most n bytes of valid UTF-8.
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
