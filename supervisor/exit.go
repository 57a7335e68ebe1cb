package supervisor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/nimbusha/nimbus/keeper"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// What a heartbeat says about a worker's last exit (docs/ARCHITECTURE.md
// section 7). The node's size is what bounds it: a supervisor's heartbeat
// is one ZooKeeper node, so each text is capped, and the tails of all its
// workers together too.
const (
	maxErrorBytes     = 512     // WorkerState.last_error
	tailLines         = 10      // WorkerState.log_tail: the last lines...
	maxTailBytes      = 1 << 10 // ...within 1 KiB
	maxHeartbeatTails = 16 << 10
)

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

// readTail returns the last tailLines lines, within maxTailBytes, of what
// the file at path holds from offset from on: the output of the run that
// started there. A file it cannot read gives "".
func readTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	start := max(from, fi.Size()-maxTailBytes-1) // one more byte: is the first line whole?
	if start >= fi.Size() {
		return ""
	}
	buf := make([]byte, fi.Size()-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return tailOf(buf[:n], start > from)
}

// tailOf keeps the last tailLines lines of b within maxTailBytes; cut says
// b starts inside the output, so its first line may be partial and is
// dropped when longer text must go anyway.
func tailOf(b []byte, cut bool) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) > maxTailBytes {
		b = b[len(b)-maxTailBytes:]
		cut = true
	}
	lines := bytes.Split(b, []byte("\n"))
	if cut && len(lines) > 1 {
		lines = lines[1:] // partial
	}
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	// A worker may print anything; a proto string must be UTF-8.
	return strings.ToValidUTF8(string(bytes.Join(lines, []byte("\n"))), "\uFFFD")
}

// capTails drops log tails from workers, in order, once their total would
// pass maxHeartbeatTails: the heartbeat must fit a ZooKeeper node however
// many workers fail at once.
func capTails(workers []*clusterv1.WorkerState) {
	total := 0
	for _, w := range workers {
		if total+len(w.GetLogTail()) > maxHeartbeatTails {
			w.LogTail = ""
			continue
		}
		total += len(w.GetLogTail())
	}
}
