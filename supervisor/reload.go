package supervisor

import (
	"context"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
)

// reloadConfig starts the reloader of the configuration file, owned by the
// supervisor's lifecycle and ended with ctx. Of the keys it may reload
// (configs.Reloadable) a supervisor uses log.level, which the Reloader
// sets, and the lists its authorizers read (logs.users for the logviewer,
// nimbus.admins and nimbus.daemon.users for the code port).
func (s *Supervisor) reloadConfig(ctx context.Context) {
	s.reloader = daemon.NewReloader(s.cfg, s.base, func(r configs.Reload) {
		for _, a := range s.authorizers {
			a.SetPolicy(r.Config, r.Applied, r.Config.File)
		}
	})
	s.lc.Go(func() { s.reloader.Run(ctx) })
}
