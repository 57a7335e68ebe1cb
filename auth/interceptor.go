package auth

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// UnaryServerInterceptor authenticates every unary call, puts its
// principal in the context (FromContext), applies its method's rule
// (methods.go), and writes the audit line of a mutating call once it is
// answered. With authentication off it only audits. Install it with
// grpc.ChainUnaryInterceptor, first.
func (a *Authorizer) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, c, m, err := a.admit(ctx, info.FullMethod)
		var resp any
		if err == nil {
			resp, err = handler(ctx, req)
			if err == nil {
				if err = a.unchecked(c, info.FullMethod, m, targetOf(req)); err != nil {
					resp = nil
				}
			}
		}
		a.finish(ctx, info.FullMethod, m, targetOf(req), "", err)
		return resp, err
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams. It also
// holds back every message a topology-scoped stream (DownloadCode) sends
// until the handler's Authorizer.Topology check passed, so a handler that
// forgot the check sends nothing; and it reads a submit's target, the
// topology's name, from the spec the stream receives (the name alone).
func (a *Authorizer) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, c, m, err := a.admit(ss.Context(), info.FullMethod)
		s := &stream{ServerStream: ss, ctx: ctx, call: c}
		if err == nil {
			if a.enabled && m.scope == scopeTopology {
				s.guard = func() error { return a.unchecked(c, info.FullMethod, m, s.target()) }
			}
			err = handler(srv, s)
			if held := s.heldBack(); held != nil {
				err = held // whatever the handler made of the refused send
			} else if err == nil {
				err = a.unchecked(c, info.FullMethod, m, s.target())
			}
		}
		a.finish(ctx, info.FullMethod, m, s.target(), s.topologyID(), err)
		return err
	}
}

// admit authenticates a call and applies the rule of its method that needs
// no topology. The context it returns carries the call (its principal),
// even when it refuses, for the audit line. Its error is a status.
func (a *Authorizer) admit(ctx context.Context, fullMethod string) (context.Context, *call, method, error) {
	m, known := methods[fullMethod]
	c := &call{}
	ctx = context.WithValue(ctx, ctxKey{}, c)
	if !a.enabled {
		c.authorized.Store(true)
		return ctx, c, m, nil
	}
	principal, err := a.Authenticate(peerTLS(ctx))
	if err != nil {
		return ctx, c, m, apistatus.ToStatus(err)
	}
	c.principal = principal
	fwd, err := a.forwarder(ctx, principal)
	if err != nil {
		return ctx, c, m, apistatus.ToStatus(err)
	}
	c.principal, c.via, c.client = fwd.actAs, fwd.via, fwd.client
	principal = c.principal
	switch {
	case !known:
		return ctx, c, m, apistatus.ToStatus(fmt.Errorf("%w: %s may not call %s: not a method nimbus authorizes",
			apierr.ErrPermissionDenied, principal, fullMethod))
	case m.scope == scopeMethod:
		return ctx, c, m, apistatus.ToStatus(Decide(a.Policy(), principal, m.action, Target{}))
	}
	return ctx, c, m, nil
}

// unchecked is the answer to a topology-scoped call its handler answered
// without a passing Authorizer.Topology check: a bug in the handler, logged
// as an error. A read is refused (nothing was sent yet); a mutation has
// happened, so its answer stands.
func (a *Authorizer) unchecked(c *call, fullMethod string, m method, target string) error {
	if !a.enabled || m.scope != scopeTopology || c.authorized.Load() {
		return nil
	}
	a.log.Error("topology-scoped call answered without an authorization check; its handler must call Authorizer.Topology",
		"method", fullMethod, "principal", c.principal, "target", target)
	if m.mutating {
		return nil
	}
	what := m.action.phrase()
	if target != "" {
		what += " " + target
	}
	return apistatus.ToStatus(fmt.Errorf("%w: %s may not %s: the server did not check its permission",
		apierr.ErrPermissionDenied, c.principal, what))
}

// finish writes the audit line of a mutating call, or notes a refused one.
// Refused reads are logged at info when a principal was refused, and at
// debug when there was none (probes without a certificate would fill the
// log).
func (a *Authorizer) finish(ctx context.Context, fullMethod string, m method, target, topologyID string, err error) {
	if m.mutating {
		audit(ctx, a.log, m.action, target, topologyID, err)
		return
	}
	level := slog.LevelInfo
	switch status.Code(err) {
	case codes.PermissionDenied:
	case codes.Unauthenticated:
		level = slog.LevelDebug
	default:
		return
	}
	a.log.LogAttrs(ctx, level, "call refused", slog.String("principal", Who(ctx)),
		slog.String("method", fullMethod), slog.String("target", target), slog.String("outcome", outcome(err)))
}

// peerTLS is the TLS state of the call's connection, or nil if it has none.
func peerTLS(ctx context.Context) *tls.ConnectionState {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return nil
	}
	return &info.State
}

// targetOf is what a request names, for audit lines: a submission's
// topology name (from its spec), a topology id, a topology name, or the
// nimbus a hand-over names.
func targetOf(msg any) string {
	switch r := msg.(type) {
	case *nimbusv1.SubmitTopologyRequest:
		return r.GetSpec().GetName()
	case *nimbusv1.HandOverRequest:
		return r.GetTo()
	case interface{ GetTopologyId() string }:
		return r.GetTopologyId()
	case interface{ GetName() string }:
		return r.GetName()
	}
	return ""
}

// stream is a server stream whose context carries the call, and which
// notes the target it receives and the topology id a submit answers with.
type stream struct {
	grpc.ServerStream
	ctx   context.Context
	call  *call
	guard func() error // non-nil: refuse sends until the call is authorized

	mu     sync.Mutex
	tgt    string
	id     string
	refuse error // the refusal of a send held back
}

func (s *stream) Context() context.Context { return s.ctx }

func (s *stream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if err == nil {
		if t := targetOf(msg); t != "" {
			s.mu.Lock()
			if s.tgt == "" {
				s.tgt = t
			}
			s.mu.Unlock()
		}
	}
	return err
}

func (s *stream) SendMsg(msg any) error {
	if s.guard != nil {
		if err := s.guard(); err != nil {
			s.mu.Lock()
			if s.refuse == nil {
				s.refuse = err
			}
			s.mu.Unlock()
			return err
		}
	}
	if r, ok := msg.(*nimbusv1.SubmitTopologyResponse); ok {
		s.mu.Lock()
		s.id = r.GetTopologyId()
		s.mu.Unlock()
	}
	return s.ServerStream.SendMsg(msg)
}

func (s *stream) target() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tgt
}

func (s *stream) topologyID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

func (s *stream) heldBack() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refuse
}
