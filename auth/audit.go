package auth

import (
	"context"
	"log/slog"

	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apistatus"
)

// Anonymous stands for the caller in audit lines when there is no
// principal: authentication is off, or the caller presented none.
const Anonymous = "anonymous"

// Audit writes the audit line of one mutating request, at info level: who
// (the principal in ctx, or Anonymous), what (act), on what (target: a
// topology's name or id), from where (the gRPC peer's address, when ctx has
// one), and how it ended ("ok", or err's gRPC code by apistatus.ToStatus).
// It writes nothing else, so no conf value or other secret reaches the log.
//
// The gRPC interceptors call it once for every mutating RPC (submit, kill,
// activate, deactivate, rebalance); handlers do not. Another front end (an
// HTTP API) calls it once per mutating request.
func Audit(ctx context.Context, log *slog.Logger, act Action, target string, err error) {
	audit(ctx, log, act, target, "", err)
}

// audit is Audit with the id a submit was given, once known.
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
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, slog.String("remote", p.Addr.String()))
	}
	attrs = append(attrs, slog.String("outcome", outcome(err)))
	log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
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
