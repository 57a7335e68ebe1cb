package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/nimbusha/nimbus/configs"
)

// Daemon is what a main runs: built from its configuration, started,
// watched for a fatal error, closed.
type Daemon interface {
	Start(ctx context.Context) error
	Err() <-chan error
	Close()
}

// Run is a daemon's whole main: Setup with a flag for each of keys, then
// the daemon newDaemon builds, started, until SIGTERM, Ctrl-C or a fatal
// error, then closed. It returns the exit code: ExitUsage (2) for a usage
// or configuration error, ExitFailed (1) when the daemon failed, ExitOK
// (0) otherwise, --help and --version included. Only those two write to
// stdout.
func Run(name string, args []string, stdout, stderr io.Writer, keys []string, newDaemon func(*configs.Config, *slog.Logger) Daemon) int {
	cfg, logger, code, ok := Setup(name, args, stdout, stderr, keys)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// SIGHUP asks for a reload (Reloader.Run takes it while it runs): it
	// must never end the daemon, before the reloader starts, after it
	// stops, or with no file to reload. A full channel drops the signal.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	d := newDaemon(cfg, logger)
	if err := d.Start(ctx); err != nil {
		logger.Error(name+" failed to start", "err", err)
		return ExitFailed
	}
	code = ExitOK
	select {
	case <-ctx.Done():
		logger.Info("signal received; stopping")
	case err := <-d.Err():
		logger.Error(name+" failed; stopping", "err", err)
		code = ExitFailed
	}
	d.Close()
	return code
}
