package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var (
	// ErrNoSeedAnswered: no known nimbus answered a call. The error is a
	// *NoSeedAnsweredError, which says why each address failed.
	ErrNoSeedAnswered = errors.New("client: no nimbus answered")
	// ErrNoLeader: a leader-only call found no reachable leader before its
	// retry budget was spent. The error is a *NoLeaderError.
	ErrNoLeader = errors.New("client: no leader")
	// ErrClosed: the Client was used after Close.
	ErrClosed = errors.New("client: closed")
)

// SeedFailure is why one address did not answer.
type SeedFailure struct {
	Addr string
	// Err is the gRPC status error the call ended with.
	Err error
	// Dial is the dial error behind Err when no connection could be made
	// (connection refused, no such host, timeout); nil when a nimbus
	// answered.
	Dial error
}

// String is the address and the shortest true reason, such as
// "127.0.0.1:1 (connection refused)".
func (f SeedFailure) String() string {
	return fmt.Sprintf("%s (%s)", f.Addr, f.reason())
}

func (f SeedFailure) reason() string {
	if f.Dial != nil {
		return innermost(f.Dial).Error()
	}
	if st, ok := status.FromError(f.Err); ok {
		return fmt.Sprintf("%s: %s", st.Code(), st.Message())
	}
	return f.Err.Error()
}

// innermost unwraps a net error down to its cause: "dial tcp 127.0.0.1:1:
// connect: connection refused" becomes "connection refused".
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// NoSeedAnsweredError is returned when every known address failed a read
// (or a leader lookup). It wraps the last failure's status error.
type NoSeedAnsweredError struct {
	// Failures lists the addresses tried, in order, with why each failed.
	Failures []SeedFailure
}

func (e *NoSeedAnsweredError) Error() string { return "client: " + e.detail() }

func (e *NoSeedAnsweredError) detail() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.String()
	}
	return "no nimbus answered at " + strings.Join(parts, ", ")
}

// Is makes errors.Is(err, ErrNoSeedAnswered) true.
func (e *NoSeedAnsweredError) Is(target error) bool { return target == ErrNoSeedAnswered }

// Unwrap returns the last failure's error, so status.Code sees its code,
// and its dial error, so errors.Is and errors.As see why no connection
// was made (a *HandshakeError, a *PortMismatchError).
func (e *NoSeedAnsweredError) Unwrap() []error {
	if len(e.Failures) == 0 {
		return nil
	}
	last := e.Failures[len(e.Failures)-1]
	if last.Dial == nil {
		return []error{last.Err}
	}
	return []error{last.Err, last.Dial}
}

// NoLeaderError is returned when a leader-only call spent its retry budget
// without reaching a leader that answered. It wraps the last error, which
// may itself be a *NoSeedAnsweredError.
type NoLeaderError struct {
	Attempts int
	Elapsed  time.Duration
	Err      error
}

func (e *NoLeaderError) Error() string {
	last := e.Err.Error()
	var seeds *NoSeedAnsweredError
	if errors.As(e.Err, &seeds) {
		last = seeds.detail() // avoid "client: ... client: ..."
	}
	return fmt.Sprintf("client: no leader after %s and %d attempts: %s",
		e.Elapsed.Round(time.Millisecond), e.Attempts, last)
}

// Is makes errors.Is(err, ErrNoLeader) true.
func (e *NoLeaderError) Is(target error) bool { return target == ErrNoLeader }

// Unwrap returns the last error seen.
func (e *NoLeaderError) Unwrap() error { return e.Err }

// notLeader reports whether err is a nimbus's NOT_LEADER answer and, if
// so, the leader's address it named ("" when it named none).
func notLeader(err error) (leader string, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() != codes.FailedPrecondition {
		return "", false
	}
	for _, d := range st.Details() {
		info, isInfo := d.(*errdetails.ErrorInfo)
		if isInfo && info.GetDomain() == nimbusv1.ErrorDomain && info.GetReason() == nimbusv1.ReasonNotLeader {
			return info.GetMetadata()[nimbusv1.MetadataLeaderKey], true
		}
	}
	return "", false
}

// transient reports whether err may pass if the call is tried again,
// elsewhere or later: the nimbus was unreachable, had no leader, was not
// ready, or did not answer within the attempt's timeout. parentDone says
// the caller's own context has ended, which no retry can fix.
func transient(err error, parentDone bool) bool {
	if parentDone {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
