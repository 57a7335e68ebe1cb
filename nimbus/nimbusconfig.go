package nimbus

import (
	"context"

	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// GetNimbusConfig answers this nimbus's effective configuration
// (nimbusConfig). The interceptor has already checked read-nimbus-config.
func (s *service) GetNimbusConfig(context.Context, *nimbusv1.GetNimbusConfigRequest) (*nimbusv1.GetNimbusConfigResponse, error) {
	return &nimbusv1.GetNimbusConfigResponse{Nimbus: s.self, Entries: nimbusConfig(s.config())}, nil
}

// nimbusConfig is every key cfg knows, sorted, with its value as text
// and where it came from (configs.Config.Settings), the values of secret
// keys (configs.IsSecretKey: storm.zookeeper.auth.payload among them)
// redacted.
func nimbusConfig(cfg *configs.Config) []*nimbusv1.ConfEntry {
	settings := cfg.Settings()
	out := make([]*nimbusv1.ConfEntry, 0, len(settings))
	for _, st := range settings {
		e := &nimbusv1.ConfEntry{Key: st.Key, Value: st.Value, Source: st.Source.String()}
		if configs.IsSecretKey(st.Key) {
			e.Value, e.Redacted = redactedValue, true
		}
		out = append(out, e)
	}
	return out
}
