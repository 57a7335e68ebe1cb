package apistatus

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/leader"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

func TestToStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{apierr.ErrNoLeader, codes.Unavailable},
		{fmt.Errorf("wrapped: %w", apierr.ErrNoLeader), codes.Unavailable},
		{leader.ErrFenced, codes.Unavailable},
		{fmt.Errorf("commit: %w", codedistributor.ErrNotHeld), codes.NotFound},
		{codedistributor.ErrHeldNowhere, codes.NotFound},
		{fmt.Errorf("serve: %w", codedistributor.ErrCorrupt), codes.DataLoss},
		{fmt.Errorf("kill: %w: read /storms/x", cluster.ErrUnavailable), codes.Unavailable},
		{fmt.Errorf("kill: %w: fenced write", cluster.ErrOutcomeUnknown), codes.Unknown},
		{apierr.NotCommitted(fmt.Errorf("%w: distribute", cluster.ErrOutcomeUnknown)), codes.Aborted},
		{errors.New("boom"), codes.Internal},
		{validate.Invalid("spec.name", "must not be empty"), codes.InvalidArgument},
		{fmt.Errorf("kill: %w", apierr.ErrNotFound), codes.NotFound},
		{apierr.ErrAlreadyExists, codes.AlreadyExists},
		{fmt.Errorf("%w: hdfs down", apierr.ErrCodeStoreUnavailable), codes.Unavailable},
		{status.Error(codes.InvalidArgument, "name: empty"), codes.InvalidArgument},
		{apierr.ErrUnauthenticated, codes.Unauthenticated},
		{fmt.Errorf("%w: alice may not kill bobjob", apierr.ErrPermissionDenied), codes.PermissionDenied},
		{fmt.Errorf("%w: 8 uploads at once", apierr.ErrResourceExhausted), codes.ResourceExhausted},
	} {
		if got := status.Code(ToStatus(tc.err)); got != tc.want {
			t.Errorf("ToStatus(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if ToStatus(nil) != nil {
		t.Error("ToStatus(nil) != nil")
	}
}

func TestNotLeaderCarriesTheLeaderAddress(t *testing.T) {
	st := status.Convert(ToStatus(fmt.Errorf("submit: %w", &apierr.NotLeaderError{Leader: "10.0.0.7:6627"})))
	if st.Code() != codes.FailedPrecondition {
		t.Fatalf("code %v, want FailedPrecondition", st.Code())
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if info.GetReason() != nimbusv1.ReasonNotLeader || info.GetDomain() != nimbusv1.ErrorDomain || info.GetMetadata()[nimbusv1.MetadataLeaderKey] != "10.0.0.7:6627" {
				t.Fatalf("ErrorInfo %v", info)
			}
			return
		}
	}
	t.Fatalf("no ErrorInfo detail in %v", st.Details())
}

// Every validation error, whatever its field and reason, reaches the client
// as InvalidArgument with a BadRequest naming the same field (the fuzz
// targets of package validate check the errors themselves).
func FuzzToStatusValidationError(f *testing.F) {
	f.Add("spec.components[1].parallelism", "must be between 1 and 10000, got 0")
	f.Add("", "")
	f.Add("spec.config[\"\\xff\"]", "key must not contain a NUL byte")
	f.Fuzz(func(t *testing.T, field, reason string) {
		err := fmt.Errorf("wrapped: %w", validate.Invalid(field, "%s", reason))
		st := status.Convert(ToStatus(err))
		if st.Code() != codes.InvalidArgument {
			t.Fatalf("ToStatus(%v) has code %v, want InvalidArgument", err, st.Code())
		}
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 &&
				br.GetFieldViolations()[0].GetField() == field {
				return
			}
		}
		// A detail that cannot be encoded (a field that is not UTF-8) is
		// left out; the code and message still say what is wrong.
		if utf8.ValidString(field) && utf8.ValidString(reason) {
			t.Fatalf("ToStatus(%v) carries no BadRequest naming %q: %v", err, field, st.Details())
		}
	})
}

func TestHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: %q", apierr.ErrNotFound, "x"), http.StatusNotFound},
		{apierr.ErrWrongStatus, http.StatusConflict},
		{apierr.ErrPermissionDenied, http.StatusForbidden},
		{apierr.ErrUnauthenticated, http.StatusUnauthorized},
		{fmt.Errorf("wrapped: %w", apierr.ErrNoLeader), http.StatusServiceUnavailable},
		// No leader wins over the status of the last attempt it wraps.
		{fmt.Errorf("%w: %w", apierr.ErrNoLeader, status.Error(codes.FailedPrecondition, "not leader")), http.StatusServiceUnavailable},
		{status.Error(codes.InvalidArgument, "bad"), http.StatusBadRequest},
		// ZooKeeper too slow for the request's deadline: retry later.
		{fmt.Errorf("kill: %w: no answer", cluster.ErrUnavailable), http.StatusServiceUnavailable},
		{status.Error(codes.Unavailable, "cluster: ZooKeeper unavailable"), http.StatusServiceUnavailable},
		{errors.New("anything else"), http.StatusInternalServerError},
	} {
		if got := HTTPStatus(tc.err); got != tc.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
