package auth_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
)

// secureConfig is a configuration with authentication on and the cast's
// lists; users is nimbus.users.
func secureConfig(users ...string) *configs.Config {
	cfg := configs.Default()
	cfg.TLSEnable, cfg.TLSClientAuthRequired = true, true
	cfg.NimbusAdmins = []string{admin}
	cfg.NimbusUsers = users
	cfg.NimbusSupervisorUsers = []string{supervisor}
	cfg.NimbusDaemonUsers = []string{daemon}
	return cfg
}

func newAuthorizer(t *testing.T, cfg *configs.Config, log *slog.Logger) *auth.Authorizer {
	t.Helper()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a, err := auth.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestNewRejectsUnknownField(t *testing.T) {
	cfg := secureConfig()
	cfg.TLSPrincipal = "subject.o"
	if _, err := auth.New(cfg, slog.Default()); err == nil {
		t.Fatal("accepted an unknown nimbus.grpc.tls.principal")
	}
}

// TestTopologyOff: with authentication off every check passes and no one is
// named.
func TestTopologyOff(t *testing.T) {
	cfg := secureConfig(nimbusUser)
	cfg.TLSClientAuthRequired = false
	a := newAuthorizer(t, cfg, nil)
	if a.Enabled() {
		t.Fatal("enabled without client authentication")
	}
	for _, ctx := range []context.Context{context.Background(), auth.NewContext(context.Background(), "")} {
		if p, ok := auth.FromContext(ctx); ok || p != "" {
			t.Fatalf("a principal with authentication off: %q", p)
		}
		for _, act := range auth.Actions() {
			if err := a.Topology(ctx, act, topologyID, owner, nil); err != nil {
				t.Errorf("%s refused with authentication off: %v", act, err)
			}
		}
	}
}

// TestTopologyOn: Topology answers as Decide does for the principal in the
// context, and a context that carries none is unauthenticated.
func TestTopologyOn(t *testing.T) {
	a := newAuthorizer(t, secureConfig(nimbusUser), nil)
	users := []string{topoUser}
	for _, who := range cast {
		ctx := auth.NewContext(context.Background(), who)
		if p, ok := auth.FromContext(ctx); !ok || p != who {
			t.Fatalf("FromContext = %q, %v", p, ok)
		}
		for _, act := range auth.Actions() {
			got := a.Topology(ctx, act, topologyID, owner, users)
			want := auth.Decide(auth.PolicyOf(secureConfig(nimbusUser)), who, act,
				auth.Target{Topology: topologyID, Owner: owner, Users: users})
			if (got == nil) != (want == nil) {
				t.Errorf("%s %s: Topology says %v, Decide %v", who, act, got, want)
			}
		}
	}
	if err := a.Topology(context.Background(), auth.ActionKill, topologyID, owner, users); !errors.Is(err, apierr.ErrUnauthenticated) {
		t.Fatalf("a context without a principal: got %v, want Unauthenticated", err)
	}
}

// TestOwner: a submission is owned by its principal, whatever the spec
// claims; the claim counts only with authentication off.
func TestOwner(t *testing.T) {
	on := newAuthorizer(t, secureConfig(), nil)
	if got, err := on.Owner(auth.NewContext(context.Background(), "alice"), "mallory"); err != nil || got != "alice" {
		t.Errorf("an authenticated submit is owned by %q (%v), want alice", got, err)
	}
	if _, err := on.Owner(context.Background(), "mallory"); !errors.Is(err, apierr.ErrUnauthenticated) {
		t.Errorf("no principal with authentication on: %v, want Unauthenticated", err)
	}
	cfg := secureConfig()
	cfg.TLSClientAuthRequired = false
	if got, err := newAuthorizer(t, cfg, nil).Owner(context.Background(), "bob"); err != nil || got != "bob" {
		t.Errorf("an anonymous submit is owned by %q (%v), want the claimed bob", got, err)
	}
}
