package nimbus

import (
	"context"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
)

// The keys a running nimbus takes from a changed file (configs.Reloadable)
// reach it here: the authorizer's policy, swapped whole, and the upload
// limits, which handlers read from config() on every request. log.level
// is the Reloader's own.

// config is the configuration in force: s.cfg with the values a reload
// changed (configs.Reloadable). One atomic load: a request reads it once
// and keeps what it read.
func (s *service) config() *configs.Config {
	if c := s.live.Load(); c != nil {
		return c
	}
	return s.cfg
}

// reloadConfig starts the reloader of the configuration file, owned by the
// nimbus's lifecycle and ended with ctx.
func (s *Server) reloadConfig(ctx context.Context) {
	s.reloader = daemon.NewReloader(s.cfg, s.base, s.applyReload)
	s.lc.Go(func() { s.reloader.Run(ctx) })
}

// applyReload puts a reload's configuration in force.
func (s *Server) applyReload(r configs.Reload) {
	s.svc.live.Store(r.Config)
	s.svc.uploads.setLimit(r.Config.NimbusMaxUploads)
	s.authz.SetPolicy(r.Config, r.Applied, r.Config.File)
}

// Reloader reads the configuration file again (on a change, on SIGHUP, or
// when called: tests and benchmarks). Nil before Start.
func (s *Server) Reloader() *daemon.Reloader { return s.reloader }
