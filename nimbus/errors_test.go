package nimbus

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/leader"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestToStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{ErrNoLeader, codes.Unavailable},
		{fmt.Errorf("wrapped: %w", ErrNoLeader), codes.Unavailable},
		{leader.ErrFenced, codes.Unavailable},
		{zk.ErrNoServer, codes.Unavailable},
		{zk.ErrSessionExpired, codes.Unavailable},
		{zk.ErrConnectionClosed, codes.Unknown}, // may have been applied
		{errors.New("boom"), codes.Internal},
		{invalid("spec.name", "must not be empty"), codes.InvalidArgument},
		{fmt.Errorf("kill: %w", ErrNotFound), codes.NotFound},
		{ErrAlreadyExists, codes.AlreadyExists},
		{fmt.Errorf("%w: hdfs down", ErrCodeStoreUnavailable), codes.Unavailable},
		{status.Error(codes.InvalidArgument, "name: empty"), codes.InvalidArgument},
	} {
		if got := status.Code(toStatus(tc.err)); got != tc.want {
			t.Errorf("toStatus(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}

func TestNotLeaderCarriesTheLeaderAddress(t *testing.T) {
	st := status.Convert(toStatus(fmt.Errorf("submit: %w", &NotLeaderError{Leader: "10.0.0.7:6627"})))
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
