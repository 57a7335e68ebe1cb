package stormapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/authtest"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A nimbus whose UI authenticates no caller (TLS on, client
// authentication off) does not send an action to the leader under its own
// certificate: 403, nothing sent. A caller it authenticated is forwarded
// as before.
func TestActionWithoutCallerIsNotSentAsThisNimbus(t *testing.T) {
	ca := authtest.NewCA(t)
	for _, tc := range []struct {
		name       string
		clientAuth bool
		who        string
		want       int
		sent       int
	}{
		{"no caller, authentication off", false, "", http.StatusForbidden, 0},
		{"certificate ignored, authentication off", false, "alice", http.StatusForbidden, 0},
		{"authenticated caller", true, "alice", http.StatusOK, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configs.Default()
			cfg.TLSEnable, cfg.TLSClientAuthRequired = true, tc.clientAuth
			authz, err := auth.New(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			s := &secureAPI{ca: ca, log: &lockedBuffer{}, actor: &forwardingActor{}}
			reads := &fakeReads{cluster: &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
				Topologies: []*nimbusv1.TopologySummary{{Id: "wc-1", Name: "wc"}},
			}}}
			s.srv = httptest.NewUnstartedServer(New(Config{Reads: reads, Actions: s.actor, Authz: authz, ActionsEnabled: true, LendsIdentity: true,
				State: func() State { return State{Leader: "127.0.0.1:6627"} }}))
			s.srv.TLS = ca.ServerConfig(t)
			s.srv.StartTLS()
			defer s.srv.Close()

			if code, _ := s.do(t, tc.who, http.MethodPost, "/api/v1/topology/wc-1/deactivate", "", nil); code != tc.want {
				t.Errorf("deactivate: %d, want %d", code, tc.want)
			}
			if s.actor.calls != tc.sent {
				t.Errorf("%d calls reached the leader, want %d", s.actor.calls, tc.sent)
			}
		})
	}
}
