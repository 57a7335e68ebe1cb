package auth

import (
	"context"
	"sync/atomic"
)

type ctxKey struct{}

// call is what the interceptor learned about one call, carried in its
// context for the handler.
type call struct {
	principal string
	via       string // the daemon that forwarded the call for principal (auth.Forward), if any
	client    string // the forwarded caller's own address, when via sent it (auth.WithClient)
	// authorized: a topology-scoped check passed (Authorizer.Topology), or
	// authorization is off; the interceptors hold back a topology-scoped
	// answer until it is set.
	authorized atomic.Bool
}

// NewContext returns ctx carrying principal as the authenticated caller:
// the interceptors do this for every call; a server that authenticates by
// other means (an HTTP API reading r.TLS with Authorizer.Authenticate) and
// tests do it themselves.
func NewContext(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, ctxKey{}, &call{principal: principal})
}

// FromContext returns the principal of the call ctx belongs to, and false
// when there is none: authentication is off, or ctx did not pass through
// the interceptors (or NewContext).
func FromContext(ctx context.Context) (string, bool) {
	c := callOf(ctx)
	if c == nil || c.principal == "" {
		return "", false
	}
	return c.principal, true
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(ctxKey{}).(*call)
	return c
}
