package main

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
)

// Exit codes: what a script can act on without reading the message. The
// exact gRPC code is in the JSON error (-o json).
const (
	exitOK          = 0
	exitError       = 1 // the command failed for another reason
	exitUsage       = 2 // the command line or a file it names is wrong; nothing was sent
	exitInvalid     = 3 // the nimbus refused the request as invalid
	exitNotFound    = 4 // no such topology
	exitExists      = 5 // the name is taken
	exitWrongStatus = 6 // the topology's status does not allow it
	exitDenied      = 7 // not authenticated, or not allowed
	exitUnavailable = 8 // no nimbus or no leader answered in time: try again
)

// exitCodesHelp is the table in stormctl --help.
const exitCodesHelp = `Exit codes:
  0  success
  1  failed for another reason (a file it could not read, an internal error)
  2  usage: the command line or the topology file is wrong; nothing was sent
  3  invalid: the nimbus refused the request (INVALID_ARGUMENT)
  4  not found: no such topology (NOT_FOUND)
  5  exists: the topology name is taken (ALREADY_EXISTS)
  6  wrong status: the topology's status does not allow it (FAILED_PRECONDITION)
  7  denied: not authenticated or not authorized (UNAUTHENTICATED, PERMISSION_DENIED)
  8  unavailable: no nimbus or no leader answered in time, or the nimbus is busy;
     try again (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED)
With -o json an error is also a JSON object on stderr:
  {"error": {"message": "...", "code": "NOT_FOUND", "exitCode": 4}}`

// errorCode is the gRPC code err carries: a nimbus's status, a local time
// limit or interruption, or UNAVAILABLE when no nimbus or leader
// answered. ok is false for an error that is no call's (a file, a flag).
func errorCode(err error) (code codes.Code, ok bool) {
	switch {
	case errors.Is(err, client.ErrNoSeedAnswered), errors.Is(err, client.ErrNoLeader):
		return codes.Unavailable, true
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, true
	case errors.Is(err, context.Canceled):
		return codes.Canceled, true
	}
	var st interface{ GRPCStatus() *status.Status }
	if errors.As(err, &st) {
		return st.GRPCStatus().Code(), true
	}
	return codes.Unknown, false
}

// exitCode is the exit code of a command that failed with err.
func exitCode(err error) int {
	var usage *usageError
	if errors.As(err, &usage) {
		return exitUsage
	}
	code, ok := errorCode(err)
	if !ok {
		return exitError
	}
	switch code {
	case codes.InvalidArgument:
		return exitInvalid
	case codes.NotFound:
		return exitNotFound
	case codes.AlreadyExists:
		return exitExists
	case codes.FailedPrecondition:
		return exitWrongStatus
	case codes.Unauthenticated, codes.PermissionDenied:
		return exitDenied
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return exitUnavailable
	}
	return exitError
}

// jsonError is an error as -o json writes it on stderr.
type jsonError struct {
	Error struct {
		Message  string `json:"message"`
		Code     string `json:"code,omitempty"` // the gRPC code's name, NOT_FOUND; absent when no call failed
		ExitCode int    `json:"exitCode"`
	} `json:"error"`
}

// writeJSONError writes err as a jsonError with its message line and exit
// code.
func writeJSONError(w io.Writer, err error, line string, exit int) error {
	var e jsonError
	e.Error.Message, e.Error.ExitCode = line, exit
	if code, ok := errorCode(err); ok {
		e.Error.Code = codeName(code)
	}
	return writeJSONValue(w, e)
}

// codeName is a gRPC code's canonical name, as google.rpc.Code spells it
// (NOT_FOUND), not Go's (NotFound).
func codeName(c codes.Code) string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return c.String()
}

var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}
