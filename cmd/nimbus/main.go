// Command nimbus runs one nimbus daemon: see package nimbus.
package main

import (
	"log/slog"
	"os"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/nimbus"
)

func main() {
	os.Exit(daemon.Run("nimbus", os.Args[1:], os.Stdout, os.Stderr, configs.NimbusFlagKeys(),
		func(cfg *configs.Config, log *slog.Logger) daemon.Daemon { return nimbus.New(cfg, log) }))
}
