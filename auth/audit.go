package auth

import (
	"context"
	"log/slog"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apistatus"
)

// Anonymous stands for the caller in audit lines when there is no
// principal: authentication is off, or the caller presented none.
const Anonymous = "anonymous"

// audit writes the audit line of one mutating request, at info level: who
// (the principal in ctx, or Anonymous), what (act), on what (target: a
// topology's name or id; topologyID, a submit's id once known), from where
// (the gRPC peer's address, when ctx has one), and how it ended ("ok", or
// err's gRPC code by apistatus.ToStatus). It writes nothing else, so no
// conf value or other secret reaches the log.
//
// The gRPC interceptors call it once for every mutating RPC; handlers do
// not. A call another nimbus forwarded (Forward) is named with "via" (that
// nimbus) and "client" (its caller's address, as that nimbus saw it). The
// HTTP API writes its own lines with Authorizer.AuditHTTP.
func audit(ctx context.Context, log *slog.Logger, act Action, target, topologyID string, err error) {
	attrs := []slog.Attr{
		slog.String("principal", Who(ctx)),
		slog.String("action", string(act)),
		slog.String("target", target),
	}
	if topologyID != "" {
		attrs = append(attrs, slog.String("topology", topologyID))
	}
	if c := callOf(ctx); c != nil && c.via != "" {
		attrs = append(attrs, slog.String("via", c.via))
		if c.client != "" {
			attrs = append(attrs, slog.String("client", c.client))
		}
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, slog.String("remote", p.Addr.String()))
	}
	attrs = append(attrs, slog.String("outcome", outcome(err)))
	log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}

// maxAuditedBytes bounds what an HTTP audit line quotes of a request
// (its path, its target): a long path cannot fill the log.
const maxAuditedBytes = 256

// AuditHTTP writes the audit line of one mutating HTTP request (a REST
// API POST), whatever its outcome, refusals before any route or
// authentication included: who (the principal of r's verified client
// certificate, or Anonymous), what (act, "" when r matched no action; its
// method and path), on what (target: the topology id or nimbus its path or
// query names), from where (r.RemoteAddr, the connection's address: a
// header such as X-Forwarded-For is written by the client and never
// believed), and how it ended (outcome as Audit's, and the HTTP code
// apistatus.HTTPStatus gives err). Reads are not audited.
func (a *Authorizer) AuditHTTP(r *http.Request, act Action, target string, err error) {
	principal, aerr := a.Authenticate(r.TLS)
	if aerr != nil || principal == "" {
		principal = Anonymous
	}
	code := http.StatusOK
	if err != nil {
		code = apistatus.HTTPStatus(err)
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "audit",
		slog.String("principal", principal),
		slog.String("action", string(act)),
		slog.String("target", capped(target)),
		slog.String("method", capped(r.Method)),
		slog.String("path", capped(r.URL.Path)),
		slog.String("remote", r.RemoteAddr),
		slog.String("outcome", httpOutcome(err, code)),
		slog.Int("code", code))
}

// httpOutcome is outcome for an HTTP answer of code: the HTTP API's own
// refusals (no such path, wrong method) have no gRPC code of their own.
func httpOutcome(err error, code int) string {
	switch {
	case err == nil:
		return "ok"
	case code == http.StatusNotFound:
		return codes.NotFound.String()
	case code == http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	}
	return outcome(err)
}

// capped is s cut to maxAuditedBytes.
func capped(s string) string {
	if len(s) > maxAuditedBytes {
		return s[:maxAuditedBytes] + "..."
	}
	return s
}

// Who names the caller of ctx for a log line: its principal, or
// Anonymous.
func Who(ctx context.Context) string {
	if p, ok := FromContext(ctx); ok {
		return p
	}
	return Anonymous
}

// outcome is how a request ended, in an audit line: "ok" or the gRPC code
// its error maps to (never the error's text, which may quote the request).
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return status.Code(apistatus.ToStatus(err)).String()
}
