package auth

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/metadata"

	"github.com/nimbusha/nimbus/apierr"
)

// forwardedFor is the gRPC metadata key with which a nimbus that
// authenticated a caller by other means (the HTTP API on a follower)
// forwards that caller's request to the leader: the leader authorizes and
// audits the request as that principal, as Storm's doAsUser does. Only
// nimbus.daemon.users may send it.
const forwardedFor = "nimbus-forwarded-for"

// Forward returns ctx for an outgoing call made for the caller of ctx:
// with authentication on, the callee acts as that caller, not as this
// daemon. Without a caller in ctx it returns ctx.
func Forward(ctx context.Context) context.Context {
	p, ok := FromContext(ctx)
	if !ok {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, forwardedFor, p)
}

// forwarder applies a forwarded call's principal: it returns the
// principal to act as (principal itself when the call is not forwarded)
// and who forwarded it, or an error wrapping apierr.ErrPermissionDenied
// when principal may not forward.
func (a *Authorizer) forwarder(ctx context.Context, principal string) (actAs, via string, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(forwardedFor)
	switch {
	case len(vals) == 0:
		return principal, "", nil
	case len(vals) > 1 || vals[0] == "":
		return "", "", fmt.Errorf("%w: %s: %s must name one principal", apierr.ErrPermissionDenied, principal, forwardedFor)
	case !slices.Contains(a.policy.Daemons, principal):
		return "", "", fmt.Errorf("%w: %s may not act for %s: only nimbus.daemon.users forward requests",
			apierr.ErrPermissionDenied, principal, vals[0])
	}
	return vals[0], principal, nil
}
