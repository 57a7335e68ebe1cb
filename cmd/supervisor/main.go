// Command supervisor runs one supervisor daemon: see package supervisor.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/supervisor"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	cfg, logger, code, ok := daemon.Setup("supervisor", args, stderr, configs.SupervisorFlagKeys())
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := supervisor.New(cfg, logger)
	if err := s.Start(ctx); err != nil {
		logger.Error("supervisor failed to start", "err", err)
		return 1
	}
	code = 0
	select {
	case <-ctx.Done():
		logger.Info("signal received; stopping workers")
	case err := <-s.Err():
		logger.Error("supervisor failed; stopping workers", "err", err)
		code = 1
	}
	s.Close()
	return code
}
