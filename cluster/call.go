package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/apierr"
)

// Errors of a ZooKeeper call made on behalf of a request (Call, CallWrite).
var (
	// ErrUnavailable: ZooKeeper could not be asked, or did not answer
	// within the request's deadline. Nothing was written: a read, or a
	// write that was never sent. Retrying is safe.
	ErrUnavailable = apierr.Sentinel("cluster: ZooKeeper unavailable", apierr.ErrUnavailable)
	// ErrOutcomeUnknown: a write was sent but ZooKeeper did not answer
	// within the request's deadline. It may still apply: check before
	// retrying.
	ErrOutcomeUnknown = apierr.Sentinel("cluster: outcome unknown", apierr.ErrOutcomeUnknown)
)

// MaxAbandoned bounds the calls a Session may have abandoned and still
// waiting for ZooKeeper. Past it, new calls fail fast with ErrUnavailable
// rather than pile goroutines onto a server that does not answer.
const MaxAbandoned = 32

// maxMargin and marginFraction set how long before the request's deadline
// a call gives up, min(100 ms, 10 % of what is left), so the answer
// reaches the client before its own deadline passes.
const (
	maxMargin      = 100 * time.Millisecond
	marginFraction = 10
)

// Call runs fn, a read, on the session's connection within ctx's deadline
// (less a margin; see budget). go-zookeeper's calls take no context: one
// sent to a stopped or partitioned server blocks until the connection is
// declared dead (2/3 of the session timeout). Call returns earlier:
//   - at once with ErrUnavailable when there is no session (a call would
//     wait in go-zookeeper's queue until one came back) or when
//     MaxAbandoned calls are still out;
//   - with ErrUnavailable when the budget ends first, leaving fn to finish
//     in a goroutine the Session owns (counted by Abandoned until fn
//     returns, which it does on the server's answer, on the connection's
//     receive timeout, or on Close);
//   - with ctx's error, wrapped in ErrUnavailable, when ctx is cancelled;
//   - with ErrUnavailable when the connection closed before the answer
//     (zk.ErrConnectionClosed): a read wrote nothing (failure says what
//     the other transport errors mean).
//
// what names the call in errors ("read /storm/storms/x").
func Call[T any](ctx context.Context, s *Session, what string, fn func(*zk.Conn) (T, error)) (T, error) {
	return call(ctx, s, what, false, fn)
}

// CallWrite is Call for a write: when the budget ends after fn was started,
// the write may still apply, so the error wraps ErrOutcomeUnknown instead
// of ErrUnavailable, and so does a connection closed before the answer. A
// write refused before it started (no session, too many calls out) is
// ErrUnavailable: nothing was sent.
func CallWrite[T any](ctx context.Context, s *Session, what string, fn func(*zk.Conn) (T, error)) (T, error) {
	return call(ctx, s, what, true, fn)
}

// Abandoned is how many calls this Session gave up on that ZooKeeper has
// not answered yet (the nimbus_zookeeper_abandoned_calls gauge).
func (s *Session) Abandoned() int64 { return s.calls.abandoned.Load() }

// calls is the Session's record of the calls it abandoned.
type calls struct {
	running   sync.WaitGroup // every call's goroutine, until fn returns
	abandoned atomic.Int64
	// capLogged is set when the cap was first hit in a spell of
	// abandoned calls, so it is logged once; cleared when the count
	// returns to zero.
	capLogged atomic.Bool
}

// callResult is what fn returned.
type callResult[T any] struct {
	v   T
	err error
}

// The states of one call, which its caller and its goroutine race to set:
// whichever moves it out of running decides who accounts for the result.
const (
	callRunning int32 = iota
	callAnswered
	callAbandoned
)

// call is Call and CallWrite as named steps.
func call[T any](ctx context.Context, s *Session, what string, write bool, fn func(*zk.Conn) (T, error)) (T, error) {
	var zero T
	// 1. Fail fast: no session (the call would queue until one came back),
	// too many calls out, or no time left.
	if err := s.admit(what); err != nil {
		return zero, err
	}
	budget, hasBudget := Budget(ctx)
	if hasBudget && budget <= 0 {
		return zero, fmt.Errorf("%w: %s: the request's deadline leaves no time to ask ZooKeeper", ErrUnavailable, what)
	}
	// 2. Run fn in a goroutine the Session owns; its result channel has
	// room for the answer, so it never blocks on a caller that left.
	var state atomic.Int32
	done := make(chan callResult[T], 1)
	counted := make(chan struct{}) // closed once an abandonment is counted
	conn := s.Conn()
	s.calls.running.Go(func() {
		v, err := fn(conn)
		if state.CompareAndSwap(callRunning, callAnswered) {
			done <- callResult[T]{v, err}
			return
		}
		<-counted // the caller counts before it closes: never below zero
		s.released(what)
	})
	// 3. Wait for the answer, the budget or ctx.
	var expired <-chan time.Time
	if hasBudget {
		timer := time.NewTimer(budget)
		defer timer.Stop()
		expired = timer.C
	}
	var cause error
	select {
	case r := <-done:
		return r.v, failure(write, what, r.err)
	case <-expired:
		cause = fmt.Errorf("ZooKeeper did not answer within the request's deadline (%s, after %v)", what, budget.Round(time.Millisecond))
	case <-ctx.Done():
		cause = fmt.Errorf("%s: %w", what, ctx.Err())
	}
	// 4. Abandon it, unless the answer came meanwhile; the goroutine
	// uncounts it when fn returns.
	if !state.CompareAndSwap(callRunning, callAbandoned) {
		r := <-done // answered after all
		return r.v, failure(write, what, r.err)
	}
	s.abandon(what)
	close(counted)
	if write {
		return zero, fmt.Errorf("%w: the write may still apply: %w", ErrOutcomeUnknown, cause)
	}
	return zero, fmt.Errorf("%w: %w", ErrUnavailable, cause)
}

// failure says what a call's error means for the request. An answer lost
// with its connection is ErrUnavailable for a read, which wrote nothing,
// and ErrOutcomeUnknown for a write, which may have applied. No server, an
// expired session or a closing client mean apierr.ErrUnavailable (retry
// later) but not ErrUnavailable: go-zookeeper fails requests already sent
// with them too, so a caller that must know whether a write was sent (a
// submission's commit) does not take them for "nothing written". Any other
// error is ZooKeeper's answer (NoNode, BadVersion, ...) and stays as it is.
func failure(write bool, what string, err error) error {
	switch {
	case errors.Is(err, zk.ErrConnectionClosed) && write:
		return fmt.Errorf("%w: %s: %w", ErrOutcomeUnknown, what, err)
	case errors.Is(err, zk.ErrConnectionClosed):
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
	case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("%w: %s: %w", apierr.ErrUnavailable, what, err)
	}
	return err
}

// admit refuses a call that cannot be answered in time: there is no
// session, or MaxAbandoned calls are still out.
func (s *Session) admit(what string) error {
	if state, _, _ := s.State(); state != zk.StateHasSession {
		return fmt.Errorf("%w: %s: no ZooKeeper session (%s)", ErrUnavailable, what, state)
	}
	if n := s.calls.abandoned.Load(); n >= MaxAbandoned {
		if s.calls.capLogged.CompareAndSwap(false, true) {
			s.log.Warn("ZooKeeper is slow: refusing calls until it answers those outstanding",
				"abandoned", n, "max", MaxAbandoned)
		}
		return fmt.Errorf("%w: %s: ZooKeeper is slow: %d calls outstanding", ErrUnavailable, what, n)
	}
	return nil
}

// abandon counts a call given up on; the first of a spell is logged.
func (s *Session) abandon(what string) {
	if s.calls.abandoned.Add(1) == 1 {
		s.log.Warn("ZooKeeper did not answer within a request's deadline; the call is abandoned", "call", what)
	}
}

// released uncounts an abandoned call that ZooKeeper (or the connection's
// end) has now answered; the last of a spell is logged.
func (s *Session) released(what string) {
	if s.calls.abandoned.Add(-1) == 0 {
		s.calls.capLogged.Store(false)
		s.log.Info("ZooKeeper answered every abandoned call", "last", what)
	}
}

// Budget is how long work done under ctx on behalf of a request may wait:
// until ctx's deadline less a margin of min(maxMargin, 10 % of the time
// left), so that the answer (often UNAVAILABLE) still reaches the client
// before its own deadline turns it into DEADLINE_EXCEEDED. Without a
// deadline there is no budget; for a ZooKeeper call, go-zookeeper's
// receive timeout (2/3 of the session timeout) bounds it then.
func Budget(ctx context.Context) (time.Duration, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := time.Until(deadline)
	return left - min(maxMargin, left/marginFraction), true
}

// WithinBudget is ctx ending after limit or at its Budget, whichever comes
// first: for a wait on a request path whose answer must still go out.
func WithinBudget(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	if budget, ok := Budget(ctx); ok {
		limit = min(limit, budget)
	}
	return context.WithTimeout(ctx, limit)
}
