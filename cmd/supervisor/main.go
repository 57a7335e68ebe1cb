// Command supervisor runs one supervisor daemon: see package supervisor.
// Stopping it (SIGTERM, Ctrl-C) stops its workers first.
package main

import (
	"log/slog"
	"os"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/supervisor"
)

func main() {
	os.Exit(daemon.Run("supervisor", os.Args[1:], os.Stdout, os.Stderr, configs.SupervisorFlagKeys(),
		func(cfg *configs.Config, log *slog.Logger) daemon.Daemon { return supervisor.New(cfg, log) }))
}
