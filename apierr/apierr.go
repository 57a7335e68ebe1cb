package apierr

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/leader"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The errors a request can end with. Their messages keep the "nimbus:"
// prefix clients have always seen.
var (
	// ErrNoLeader: no nimbus leads right now (an election is under way).
	ErrNoLeader = errors.New("nimbus: no leader elected")
	// ErrNotFound: no topology has that name (or id).
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
	// ErrUnauthenticated: the caller presented no identity this nimbus
	// verifies (no client certificate, with authentication on).
	ErrUnauthenticated = errors.New("nimbus: unauthenticated")
	// ErrPermissionDenied: the caller's principal may not do what it asked.
	// Nothing was changed.
	ErrPermissionDenied = errors.New("nimbus: permission denied")
	// ErrResourceExhausted: a limit was reached (too many uploads at once,
	// a full disk); nothing was stored. Retry later.
	ErrResourceExhausted = errors.New("nimbus: resource exhausted")
)

// NotCommitted marks a failure before a submission's commit: nothing was
// committed, so the client may submit again (ABORTED). The cause is kept as
// text (%v), so its own sentinel cannot change the code.
func NotCommitted(cause error) error {
	return fmt.Errorf("%w: %v", ErrNotCommitted, cause)
}

// NotLeaderError is returned by leader-only work on a follower.
type NotLeaderError struct{ Leader string } // host:port

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("nimbus: not the leader; the leader is %s", e.Leader)
}

// ToStatus maps the error a request ended with to a gRPC status error. It
// is the only place that does. An error that is a status already passes
// through.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var notLeader *NotLeaderError
	var bad *validate.Error
	switch {
	case errors.As(err, &bad):
		st, derr := status.New(codes.InvalidArgument, err.Error()).WithDetails(&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: bad.Field, Description: bad.Reason}},
		})
		if derr != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		return st.Err()
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, codedistributor.ErrNotHeld):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, codedistributor.ErrCorrupt):
		return status.Error(codes.DataLoss, err.Error())
	case errors.Is(err, ErrNotCommitted):
		// Nothing was committed: the client may submit again.
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, ErrWrongStatus):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, ErrUnauthenticated):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, ErrPermissionDenied):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, ErrResourceExhausted):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.As(err, &notLeader):
		st, derr := status.New(codes.FailedPrecondition, err.Error()).WithDetails(&errdetails.ErrorInfo{
			Reason:   nimbusv1.ReasonNotLeader,
			Domain:   nimbusv1.ErrorDomain,
			Metadata: map[string]string{nimbusv1.MetadataLeaderKey: notLeader.Leader},
		})
		if derr != nil {
			return status.Error(codes.FailedPrecondition, err.Error())
		}
		return st.Err()
	case errors.Is(err, ErrNoLeader), errors.Is(err, ErrCodeStoreUnavailable),
		errors.Is(err, leader.ErrFenced), errors.Is(err, cluster.ErrUnavailable),
		errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing):
		// Nothing was written: safe to retry. cluster.ErrUnavailable is
		// also a read or a write never sent that ZooKeeper could not
		// answer within the request's deadline.
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, cluster.ErrOutcomeUnknown):
		// A write not answered within the request's deadline: it may
		// still apply. The message says "outcome unknown" already.
		return status.Error(codes.Unknown, err.Error())
	case errors.Is(err, zk.ErrConnectionClosed):
		// The request was sent and its answer lost: it may have been
		// applied, so the client must not retry blindly.
		return status.Error(codes.Unknown, "outcome unknown: "+err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}
