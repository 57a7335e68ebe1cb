package auth

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/configs"
)

// Authorizer applies the rules with a cluster's configuration. It is safe
// for concurrent use: its policy is swapped whole (SetPolicy) and read
// with one atomic load per decision, never under a lock.
type Authorizer struct {
	enabled bool   // configs.Config.SecureGRPC
	field   string // nimbus.grpc.tls.principal
	policy  atomic.Pointer[Policy]
	log     *slog.Logger
}

// New returns the authorizer cfg configures; with authentication off
// (!cfg.SecureGRPC()) it allows every call and names no principal. log
// receives the audit lines and refusals.
func New(cfg *configs.Config, log *slog.Logger) (*Authorizer, error) {
	a := &Authorizer{enabled: cfg.SecureGRPC(), field: cfg.TLSPrincipal, log: log.With("component", "auth")}
	p := PolicyOf(cfg)
	a.policy.Store(&p)
	if a.field == "" {
		a.field = configs.DefaultTLSPrincipal
	}
	if err := checkField(a.field); err != nil {
		return nil, err
	}
	return a, nil
}

// Policy is the policy in force.
func (a *Authorizer) Policy() Policy { return *a.policy.Load() }

// SetPolicy puts the policy cfg configures in force for every decision
// from now on (a configuration reloaded while the daemon runs), and writes
// its audit line: source (the file the changes came from) as the
// principal, the changed keys as the target, each key's old and new
// values (secrets redacted). A decision under way
// keeps the policy it started with.
func (a *Authorizer) SetPolicy(cfg *configs.Config, changes []configs.Change, source string) {
	p := PolicyOf(cfg)
	a.policy.Store(&p)
	keys := make([]string, len(changes))
	for i, c := range changes {
		keys[i] = c.Key
	}
	attrs := []slog.Attr{
		slog.String("principal", source), // no caller: the file's owner made the change
		slog.String("action", ActionReloadConfig),
		slog.String("target", strings.Join(keys, ",")),
	}
	for _, c := range changes {
		attrs = append(attrs, slog.Group(c.Key, slog.String("old", c.Old), slog.String("new", c.New)))
	}
	attrs = append(attrs, slog.String("outcome", outcome(nil)))
	a.log.LogAttrs(context.Background(), slog.LevelInfo, "audit", attrs...)
}

// ActionReloadConfig names a reload of the configuration in audit lines;
// no caller takes it, so it has no rule.
const ActionReloadConfig = "reload-config"

// Enabled reports whether callers are authenticated and authorized.
func (a *Authorizer) Enabled() bool { return a.enabled }

// Authenticate names the principal of a caller's TLS connection state (a
// gRPC peer's credentials.TLSInfo.State, an HTTP request's r.TLS): "" and
// nil with authentication off; otherwise the principal, or an error
// wrapping apierr.ErrUnauthenticated.
func (a *Authorizer) Authenticate(state *tls.ConnectionState) (string, error) {
	if !a.enabled {
		return "", nil
	}
	return PrincipalOfConn(state, a.field)
}

// Check answers "may the caller of ctx take act on t?": nil with
// authentication off; otherwise Decide's answer for the principal in ctx
// (apierr.ErrUnauthenticated if ctx carries none). A nil answer lets a
// topology-scoped call's answer through the interceptor.
func (a *Authorizer) Check(ctx context.Context, act Action, t Target) error {
	c := callOf(ctx)
	if !a.enabled {
		if c != nil {
			c.authorized.Store(true)
		}
		return nil
	}
	var principal string
	if c != nil {
		principal = c.principal
	}
	if err := Decide(a.Policy(), principal, act, t); err != nil {
		return err
	}
	if c != nil {
		c.authorized.Store(true)
	}
	return nil
}

// Topology is the check a handler makes for an action on one topology
// (kill, activate, deactivate, rebalance, read-conf, fetch-code), once it
// knows the topology's owner and topology.users (TopologyUsers parses them
// from its conf). It returns nil or an error for apistatus.ToStatus: return
// it before changing anything.
func (a *Authorizer) Topology(ctx context.Context, act Action, topology, owner string, users []string) error {
	return a.Check(ctx, act, Target{Topology: topology, Owner: owner, Users: users})
}

// Blob is the check a handler makes for an action on one blob once it has
// read the blob's owner and what its ACL grants for act (Grantees, Anyone
// of t; Topology is the key). As Topology, return it before changing
// anything.
func (a *Authorizer) Blob(ctx context.Context, act Action, t Target) error {
	return a.Check(ctx, act, t)
}

// May answers Decide's question for the caller of ctx without recording
// an authorization: for filtering what a read lists (the blobs a caller
// may read). With authentication off, everything is allowed.
func (a *Authorizer) May(ctx context.Context, act Action, t Target) bool {
	if !a.enabled {
		return true
	}
	p, ok := FromContext(ctx)
	return ok && Decide(a.Policy(), p, act, t) == nil
}

// Owner is who owns what the caller of ctx submits: its principal, never
// the owner the client claimed (the spec's owner field), which counts only
// with authentication off. With
// authentication on and no principal in ctx (the interceptors were not
// installed) it returns an error wrapping apierr.ErrUnauthenticated.
func (a *Authorizer) Owner(ctx context.Context, claimed string) (string, error) {
	if !a.enabled {
		return claimed, nil
	}
	p, ok := FromContext(ctx)
	if !ok {
		return "", fmt.Errorf("%w: submit needs a verified client certificate", apierr.ErrUnauthenticated)
	}
	return p, nil
}

// checkField accepts the values of nimbus.grpc.tls.principal.
func checkField(field string) error {
	switch field {
	case configs.PrincipalCN, configs.PrincipalSANEmail, configs.PrincipalSANDNS, configs.PrincipalSANURI:
		return nil
	}
	return fmt.Errorf("auth: %s %q is not one of %s, %s, %s, %s", configs.KeyTLSPrincipal, field,
		configs.PrincipalCN, configs.PrincipalSANEmail, configs.PrincipalSANDNS, configs.PrincipalSANURI)
}
