package apistatus

import (
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apierr"
)

// HTTPStatus is the HTTP status of the error a REST request ended with
// (package stormapi): the only place that maps errors to HTTP codes. It
// follows the error's gRPC code (ToStatus), so both front ends say the
// same thing; no leader is 503 whatever the last attempt ended with.
func HTTPStatus(err error) int {
	switch {
	case errors.Is(err, apierr.ErrNoLeader):
		return http.StatusServiceUnavailable
	case errors.Is(err, apierr.ErrNoSuchPath):
		return http.StatusNotFound
	case errors.Is(err, apierr.ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed
	}
	return httpStatusOf[status.Code(ToStatus(err))]
}

// httpStatusOf is net/http's code for each gRPC code, as
// google.golang.org/grpc-gateway maps them.
var httpStatusOf = map[codes.Code]int{
	codes.OK:                 http.StatusOK,
	codes.Canceled:           499, // client closed request
	codes.Unknown:            http.StatusInternalServerError,
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
	codes.NotFound:           http.StatusNotFound,
	codes.AlreadyExists:      http.StatusConflict,
	codes.PermissionDenied:   http.StatusForbidden,
	codes.ResourceExhausted:  http.StatusTooManyRequests,
	codes.FailedPrecondition: http.StatusConflict, // the topology's status forbids it
	codes.Aborted:            http.StatusConflict,
	codes.OutOfRange:         http.StatusBadRequest,
	codes.Unimplemented:      http.StatusNotImplemented,
	codes.Internal:           http.StatusInternalServerError,
	codes.Unavailable:        http.StatusServiceUnavailable,
	codes.DataLoss:           http.StatusInternalServerError,
	codes.Unauthenticated:    http.StatusUnauthorized,
}
