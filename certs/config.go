package certs

import (
	"log/slog"

	"github.com/nimbusha/nimbus/configs"
)

// FromConfig loads the TLS material cfg names (nimbus.grpc.tls.*), or
// returns nil when TLS is off. A process with nothing to present (a client
// without a certificate of its own) may leave cert and key empty.
func FromConfig(cfg *configs.Config, logger *slog.Logger) (*Reloader, error) {
	if !cfg.TLSEnable {
		return nil, nil
	}
	return Load(Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, Truststore: cfg.TLSTruststore}, logger)
}
