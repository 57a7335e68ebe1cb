package apistatus

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// Message is err in the plain words a person reads, the same from stormctl
// and from the REST API: a status's message without gRPC's "rpc error:
// code = ... desc = ..." framing, code names or the server's "nimbus: "
// prefix, followed by the fields a BadRequest detail names that the
// message does not; the code in lower-case words when the message is
// empty. What err adds around a status (an operation's name) stays. An
// error that carries no status is its own text.
func Message(err error) string {
	var carrier interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &carrier) {
		return err.Error()
	}
	s := carrier.GRPCStatus()
	msg := strings.TrimPrefix(s.Message(), "nimbus: ")
	if msg == "" {
		msg = strings.ToLower(codeWords(s.Code().String()))
	}
	for _, d := range s.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		for _, v := range br.GetFieldViolations() {
			if !strings.Contains(msg, v.GetField()) {
				msg += fmt.Sprintf(" (%s: %s)", v.GetField(), v.GetDescription())
			}
		}
	}
	outer, inner := err.Error(), s.Err().Error()
	if outer != inner && strings.HasSuffix(outer, inner) {
		return outer[:len(outer)-len(inner)] + msg
	}
	return msg
}

// codeWords splits a code's Go name into words: "PermissionDenied" is
// "Permission Denied".
func codeWords(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}
