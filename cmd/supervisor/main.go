// Command supervisor runs one supervisor daemon: see package supervisor.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/logging"
	"github.com/nimbusha/nimbus/supervisor"
)

// flagKeys are the configuration keys that also have a flag.
var flagKeys = []string{
	"storm.zookeeper.servers", "storm.zookeeper.port", "storm.zookeeper.root",
	"storm.zookeeper.session.timeout", "storm.zookeeper.connection.timeout", "storm.local.dir",
	"storm.local.hostname", "supervisor.slots.ports", "supervisor.heartbeat.frequency.secs",
	"supervisor.worker.shutdown.sleep.secs", "storm.codedistributor.class", "log.level", "log.format",
}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := pflag.NewFlagSet("supervisor", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: supervisor [--config FILE] [flags]\n\nFlags override STORM_* environment variables, which override the file.\n\n%s", fs.FlagUsages())
	}
	configs.RegisterFlags(fs, flagKeys...)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, warnings, err := configs.Load(fs)
	if err != nil {
		fmt.Fprintf(stderr, "supervisor: %v\n", err)
		return 2
	}
	logger, err := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintf(stderr, "supervisor: %v\n", err)
		return 2
	}
	for _, w := range warnings {
		logger.Warn("configuration", "warning", w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := supervisor.New(cfg, logger)
	if err := s.Start(ctx); err != nil {
		logger.Error("supervisor failed to start", "err", err)
		return 1
	}
	<-ctx.Done()
	logger.Info("signal received; stopping workers")
	s.Close()
	return 0
}
