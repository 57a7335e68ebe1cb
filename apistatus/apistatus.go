package apistatus

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/nimbusha/nimbus/apierr"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

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
	var notLeader *apierr.NotLeaderError
	var bad *validate.Error
	switch {
	case errors.As(err, &bad):
		return withDetail(codes.InvalidArgument, err, &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: bad.Field, Description: bad.Reason}},
		})
	case errors.As(err, &notLeader):
		return withDetail(codes.FailedPrecondition, err, &errdetails.ErrorInfo{
			Reason:   nimbusv1.ReasonNotLeader,
			Domain:   nimbusv1.ErrorDomain,
			Metadata: map[string]string{nimbusv1.MetadataLeaderKey: notLeader.Leader},
		})
	}
	return status.Error(codeOf(err), err.Error())
}

// sentinelCodes is what each sentinel means on the wire, in the order they are
// tried: the first that err wraps decides.
var sentinelCodes = []struct {
	err  error
	code codes.Code
}{
	{apierr.ErrNotFound, codes.NotFound},
	{apierr.ErrBlobNotFound, codes.NotFound},
	{apierr.ErrAlreadyExists, codes.AlreadyExists},
	{apierr.ErrBlobExists, codes.AlreadyExists},
	{apierr.ErrBlobInUse, codes.FailedPrecondition},
	{apierr.ErrDataLoss, codes.DataLoss},
	{apierr.ErrNotCommitted, codes.Aborted}, // nothing committed: the client may submit again
	{apierr.ErrWrongStatus, codes.FailedPrecondition},
	{apierr.ErrUnauthenticated, codes.Unauthenticated},
	{apierr.ErrPermissionDenied, codes.PermissionDenied},
	{apierr.ErrResourceExhausted, codes.ResourceExhausted},
	// Nothing was written: safe to retry.
	{apierr.ErrNoLeader, codes.Unavailable},
	{apierr.ErrCodeStoreUnavailable, codes.Unavailable},
	{apierr.ErrUnavailable, codes.Unavailable},
	// A write may still apply: the client must not retry blindly.
	{apierr.ErrOutcomeUnknown, codes.Unknown},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
}

// codeOf is err's code by the first sentinel it wraps; Internal if none.
func codeOf(err error) codes.Code {
	for _, s := range sentinelCodes {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return codes.Internal
}

// withDetail is a status of code for err carrying detail; without it if
// the detail cannot be encoded (a field that is not UTF-8).
func withDetail(code codes.Code, err error, detail protoadapt.MessageV1) error {
	st, derr := status.New(code, err.Error()).WithDetails(detail)
	if derr != nil {
		return status.Error(code, err.Error())
	}
	return st.Err()
}
