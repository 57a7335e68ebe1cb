package auth

import (
	"context"
	"fmt"
	"net"
	"slices"

	"google.golang.org/grpc/metadata"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/configs"
)

// forwardedFor is the gRPC metadata key with which a nimbus that
// authenticated a caller by other means (the HTTP API on a follower)
// forwards that caller's request to the leader: the leader authorizes and
// audits the request as that principal, as Storm's doAsUser does. Only
// nimbus.daemon.users may send it.
const forwardedFor = "nimbus-forwarded-for"

// forwardedClient is the metadata key beside forwardedFor that carries the
// forwarded caller's network address (its HTTP connection's), so that the
// leader's audit line names the browser and not only the nimbus that
// forwarded. The leader believes it only when it honours forwardedFor;
// from anyone else it is ignored.
const forwardedClient = "nimbus-forwarded-client"

// maxClientAddr bounds a forwarded client address: host:port of an IPv6
// address with a zone fits many times over.
const maxClientAddr = 256

type clientKey struct{}

// WithClient returns ctx carrying addr, the network address of the caller
// a front end other than gRPC authenticated (an HTTP request's
// r.RemoteAddr), for Forward to pass on.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// clientOf is the caller's address WithClient put in ctx, or "".
func clientOf(ctx context.Context) string {
	addr, _ := ctx.Value(clientKey{}).(string)
	return addr
}

// Forward returns ctx for an outgoing call made for the caller of ctx:
// with authentication on, the callee acts as that caller, not as this
// daemon, and learns the caller's address (WithClient), if ctx has it.
// Without a caller in ctx it returns ctx.
func Forward(ctx context.Context) context.Context {
	p, ok := FromContext(ctx)
	if !ok {
		return ctx
	}
	kv := []string{forwardedFor, p}
	if addr := clientOf(ctx); addr != "" {
		kv = append(kv, forwardedClient, addr)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// CallerToForward returns nil when ctx has a caller for Forward to name,
// else an error wrapping apierr.ErrPermissionDenied: a call sent without
// one would reach the callee as this daemon's certificate, which may be an
// admin's, so a front end that authenticates no one (authentication off
// here) must not send it under that certificate.
func CallerToForward(ctx context.Context) error {
	if _, ok := FromContext(ctx); ok {
		return nil
	}
	return fmt.Errorf("%w: this nimbus authenticates no caller (%s is off here) and does not act at the leader under its own certificate; "+
		"set %s: true on this nimbus, or use stormctl", apierr.ErrPermissionDenied, configs.KeyTLSClientAuthRequired, configs.KeyTLSClientAuthRequired)
}

// forwarded is what a forwarded call's metadata says once its sender is
// trusted: the principal to act as (the caller's own when the call is not
// forwarded), who forwarded it, and the forwarded caller's address.
type forwarded struct {
	actAs, via, client string
}

// forwarder applies a forwarded call's metadata: it returns the principal
// to act as (principal itself when the call is not forwarded), who
// forwarded it and from which client address, or an error wrapping
// apierr.ErrPermissionDenied when principal may not forward. The client
// address is read only from a call forwarded by nimbus.daemon.users.
func (a *Authorizer) forwarder(ctx context.Context, principal string) (forwarded, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(forwardedFor)
	switch {
	case len(vals) == 0:
		return forwarded{actAs: principal}, nil
	case len(vals) > 1 || vals[0] == "":
		return forwarded{}, fmt.Errorf("%w: %s: %s must name one principal", apierr.ErrPermissionDenied, principal, forwardedFor)
	case !slices.Contains(a.Policy().Daemons, principal):
		return forwarded{}, fmt.Errorf("%w: %s may not act for %s: only nimbus.daemon.users forward requests",
			apierr.ErrPermissionDenied, principal, vals[0])
	}
	return forwarded{actAs: vals[0], via: principal, client: clientAddr(md.Get(forwardedClient))}, nil
}

// clientAddr is the one host:port a trusted forwarder sent, or "" when it
// sent none, several, or something else: an audit line then omits it
// rather than carry a value of unknown meaning.
func clientAddr(vals []string) string {
	if len(vals) != 1 || len(vals[0]) > maxClientAddr {
		return ""
	}
	if _, _, err := net.SplitHostPort(vals[0]); err != nil {
		return ""
	}
	return vals[0]
}
