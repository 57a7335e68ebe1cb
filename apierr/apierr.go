package apierr

import (
	"errors"
	"fmt"
)

// The errors a request can end with. Their messages keep the "nimbus:"
// prefix clients have always seen.
var (
	// ErrNoLeader: no nimbus leads right now (an election is under way).
	ErrNoLeader = errors.New("nimbus: no leader elected")
	// ErrNotFound: no topology has that name (or id), or the code asked
	// for is not held here.
	ErrNotFound = errors.New("nimbus: topology not found")
	// ErrAlreadyExists: a topology with that name is in /storms, or is
	// being submitted.
	ErrAlreadyExists = errors.New("nimbus: topology name in use")
	// ErrNotCommitted: a submission stopped before its topology was
	// committed (this nimbus lost leadership during the replication wait,
	// say). Nothing remains of it, so submitting again is safe.
	ErrNotCommitted = errors.New("nimbus: submission not committed")
	// ErrCodeStoreUnavailable: the code distributor could not store the
	// code (HDFS down or in safe mode, say). Nothing was written.
	ErrCodeStoreUnavailable = errors.New("nimbus: code store unavailable")
	// ErrWrongStatus: the topology's status forbids the action (activating
	// a topology that is being killed, say).
	ErrWrongStatus = errors.New("nimbus: action not allowed in the topology's status")
	// ErrBlobNotFound: no blob has the key.
	ErrBlobNotFound = errors.New("nimbus: blob not found")
	// ErrBlobExists: a blob has the key already, or one is being created
	// with it.
	ErrBlobExists = errors.New("nimbus: blob key in use")
	// ErrBlobInUse: a live topology uses the blob (its
	// topology.blobstore.map names it), so it may not be deleted.
	ErrBlobInUse = errors.New("nimbus: blob in use")
	// ErrUnauthenticated: the caller presented no identity this nimbus
	// verifies (no client certificate, with authentication on).
	ErrUnauthenticated = errors.New("nimbus: unauthenticated")
	// ErrPermissionDenied: the caller's principal may not do what it asked.
	// Nothing was changed.
	ErrPermissionDenied = errors.New("nimbus: permission denied")
	// ErrResourceExhausted: a limit was reached (too many uploads at once,
	// a full disk); nothing was stored. Retry later.
	ErrResourceExhausted = errors.New("nimbus: resource exhausted")

	// ErrUnavailable: nothing was done (ZooKeeper could not be asked in
	// time, or this nimbus stopped leading before it wrote); retrying is
	// safe.
	ErrUnavailable = errors.New("nimbus: unavailable")
	// ErrOutcomeUnknown: a write was sent and its answer lost: it may have
	// applied, so check before retrying.
	ErrOutcomeUnknown = errors.New("nimbus: outcome unknown")
	// ErrDataLoss: stored bytes do not match their digest.
	ErrDataLoss = errors.New("nimbus: data loss")

	// ErrNoSuchPath: no HTTP endpoint at the request's path.
	ErrNoSuchPath = errors.New("nimbus: no such path")
	// ErrMethodNotAllowed: the HTTP endpoint takes another method.
	ErrMethodNotAllowed = errors.New("nimbus: method not allowed")
)

// Sentinel is a sentinel error of another package, with its own message,
// that means what meaning (one of the errors above) means to a caller:
// errors.Is matches it as itself and as meaning. Lower packages declare
// their errors that reach a request this way.
func Sentinel(msg string, meaning error) error { return &sentinel{msg: msg, meaning: meaning} }

type sentinel struct {
	msg     string
	meaning error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.meaning }

// NotCommitted marks a failure before a submission's commit: nothing was
// committed, so the client may submit again. The cause is kept as text
// (%v), so its own sentinel cannot change the answer.
func NotCommitted(cause error) error {
	return fmt.Errorf("%w: %v", ErrNotCommitted, cause)
}

// NotLeaderError is returned by leader-only work on a follower.
type NotLeaderError struct{ Leader string } // host:port

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("nimbus: not the leader; the leader is %s", e.Leader)
}
