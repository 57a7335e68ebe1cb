// Command supervisor runs one supervisor daemon: see package supervisor.
// Stopping it (SIGTERM, Ctrl-C) leaves its workers to their keepers, for
// the next supervisor on the host to adopt. With the argument
// keeper.Command it is one of those keepers instead (package keeper).
package main

import (
	"log/slog"
	"os"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/keeper"
	"github.com/nimbusha/nimbus/supervisor"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == keeper.Command {
		os.Exit(keeper.Main(os.Stdin, os.Stderr))
	}
	os.Exit(daemon.Run("supervisor", os.Args[1:], os.Stdout, os.Stderr, configs.SupervisorFlagKeys(),
		func(cfg *configs.Config, log *slog.Logger) daemon.Daemon { return supervisor.New(cfg, log) }))
}
