package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// sdkCounts counts what the SDK logs at debug level behind its callers'
// backs: leader calls retried, leader redirects followed, reads sent on to
// the next nimbus. A call the SDK retried and then answered is no failure,
// but a roll should not need many.
type sdkCounts struct {
	retries, redirects, failovers atomic.Int64
}

// sdkFigures is one reading of sdkCounts, or the difference of two.
type sdkFigures struct{ retries, redirects, failovers int64 }

func (f sdkFigures) minus(g sdkFigures) sdkFigures {
	return sdkFigures{f.retries - g.retries, f.redirects - g.redirects, f.failovers - g.failovers}
}

func (f sdkFigures) String() string {
	return fmt.Sprintf("%d retries, %d redirects, %d reads sent on", f.retries, f.redirects, f.failovers)
}

func (s *sdkCounts) snapshot() sdkFigures {
	return sdkFigures{s.retries.Load(), s.redirects.Load(), s.failovers.Load()}
}

func (s *sdkCounts) Enabled(context.Context, slog.Level) bool { return true }

// Handle counts a record by its message, which the SDK keeps constant
// (client/leader.go, client/client.go, client/submit.go).
func (s *sdkCounts) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "leader call failed; retrying"):
		s.retries.Add(1)
	case strings.HasPrefix(r.Message, "following leader redirect"):
		s.redirects.Add(1)
	case strings.HasPrefix(r.Message, "nimbus did not answer; trying the next"):
		s.failovers.Add(1)
	}
	return nil
}

func (s *sdkCounts) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *sdkCounts) WithGroup(string) slog.Handler      { return s }
