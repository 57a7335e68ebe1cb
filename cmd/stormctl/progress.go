package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

const (
	// progressMinBytes: smaller artifacts upload too fast for a bar to help.
	progressMinBytes = 4 << 20
	// progressInterval: the bar is redrawn at most this often.
	progressInterval = 100 * time.Millisecond
	progressWidth    = 30
)

// isTerminal reports whether w is a character device, which is how
// stormctl tells that a person watches stderr (a terminal, or /dev/null,
// where the bar does no harm).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// progressBar draws an upload's progress on one line of a terminal,
// redrawing it in place with '\r'.
type progressBar struct {
	w     io.Writer
	now   func() time.Time
	last  time.Time // when it last drew
	width int       // length of the last line drawn, to blank leftovers
	drawn bool
}

// update draws sent of total bytes, unless it drew less than
// progressInterval ago; the last update (sent == total) always draws. A
// submission that follows a redirect starts again from zero, which the bar
// shows as it is.
func (p *progressBar) update(sent, total int64) {
	t := p.now()
	if p.drawn && sent < total && t.Sub(p.last) < progressInterval {
		return
	}
	p.last, p.drawn = t, true
	frac := 1.0
	if total > 0 {
		frac = float64(sent) / float64(total)
	}
	filled := int(frac * progressWidth)
	line := fmt.Sprintf("uploading [%s%s] %3d%% %.1f/%.1f MiB",
		strings.Repeat("#", filled), strings.Repeat(".", progressWidth-filled),
		int(frac*100), mib(sent), mib(total))
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// finish ends the bar's line, so what follows starts on a fresh one. It
// writes nothing if the bar never drew.
func (p *progressBar) finish() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
