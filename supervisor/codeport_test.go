package supervisor

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/configs"
)

// With TLS on, the code port (specs with their confs) is served only with
// client authentication; without it the supervisor refuses, naming the
// key, unless the port is disabled.
func TestCodePortNeedsClientAuthWithTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA(dir+"/ca", "Test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := ca.Issue(dir+"/sup", "supervisor", certs.CertOptions{Server: true, Client: true, Hosts: []string{"127.0.0.1"}, Lifetime: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name       string
		clientAuth bool
		port       int
		refused    bool
	}{
		{"TLS without client authentication", false, 0, true},
		{"TLS with client authentication", true, 0, false},
		{"TLS without client authentication, port disabled", false, configs.PortDisabled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configs.Default()
			cfg.TLSEnable, cfg.TLSClientAuthRequired = true, tc.clientAuth
			cfg.TLSCert, cfg.TLSKey, cfg.TLSTruststore = issued.Files.Cert, issued.Files.Key, ca.CertFile
			cfg.LocalHostname = "127.0.0.1"
			cfg.SupervisorGRPCPort = tc.port
			s := New(cfg, quiet)
			defer s.Close()
			if s.tls, err = certs.FromConfig(cfg, quiet); err != nil {
				t.Fatal(err)
			}
			err := s.listenCode()
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), configs.KeyTLSClientAuthRequired+": true") || !strings.Contains(err.Error(), configs.KeySupervisorGRPCPort+": -1") {
					t.Fatalf("listenCode: %v; want a refusal naming %s and %s: -1", err, configs.KeyTLSClientAuthRequired, configs.KeySupervisorGRPCPort)
				}
				if s.codeLn != nil {
					t.Error("the code port was bound although refused")
				}
				return
			}
			if err != nil {
				t.Fatalf("listenCode: %v", err)
			}
			if bound := s.codeLn != nil; bound != (tc.port != configs.PortDisabled) {
				t.Errorf("code port bound: %v, want %v", bound, !bound)
			}
		})
	}
}
