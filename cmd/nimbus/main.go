// Command nimbus runs one nimbus daemon: see package nimbus.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/nimbus"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	cfg, logger, code, ok := daemon.Setup("nimbus", args, stderr, configs.NimbusFlagKeys())
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	srv := nimbus.New(cfg, logger)
	if err := srv.Start(ctx); err != nil {
		logger.Error("nimbus failed to start", "err", err)
		return 1
	}
	code = 0
	select {
	case <-ctx.Done():
		logger.Info("signal received; stopping")
	case err := <-srv.Err():
		logger.Error("nimbus failed", "err", err)
		code = 1
	}
	srv.Close()
	return code
}
