package supervisor

import (
	"errors"
	"strings"

	"github.com/nimbusha/nimbus/keeper"
)

// What a heartbeat says about a worker's last exit (docs/ARCHITECTURE.md
// section 7): in the supervisor's words only, never the worker's output
// (workerlog.go). The node's size bounds it: a supervisor's heartbeat is
// one ZooKeeper node, so the text is capped.
const maxErrorBytes = 512 // WorkerState.last_error

// errCleanExit is a worker's exit with status 0: a worker is meant to run
// until stopped, so it is restarted like any other exit.
var errCleanExit = errors.New("exited with status 0")

// runExit is how a run ended, as its keeper reported it.
type runExit struct{ exit *keeper.Exit }

func (e *runExit) Error() string { return e.exit.String() }

// exitError is the error a run ended with, by its keeper's report.
func exitError(e *keeper.Exit) error {
	if e.Code != nil && *e.Code == 0 {
		return errCleanExit
	}
	return &runExit{e}
}

// exitOf is how a run ended: its exit status, or the signal that ended it.
// Both are empty when no process ran or its end is unknown.
func exitOf(err error) (code *int32, signal string) {
	if errors.Is(err, errCleanExit) {
		zero := int32(0)
		return &zero, ""
	}
	var re *runExit
	if !errors.As(err, &re) {
		return nil, ""
	}
	if re.exit.Code == nil {
		return nil, re.exit.Signal
	}
	c := int32(*re.exit.Code)
	return &c, ""
}

// capError is err's text, cut to maxErrorBytes.
func capError(err error) string {
	return truncate(err.Error(), maxErrorBytes)
}

// truncate cuts s to at most n bytes of valid UTF-8 (a proto string must
// be), dropping a rune cut in two and any invalid byte.
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
