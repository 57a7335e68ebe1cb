// Command supervisor runs one supervisor daemon: see package supervisor.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/supervisor"
)

// flagKeys are the configuration keys that also have a flag.
var flagKeys = []string{
	"storm.zookeeper.servers", "storm.zookeeper.port", "storm.zookeeper.root",
	"storm.zookeeper.session.timeout", "storm.zookeeper.connection.timeout", "storm.local.dir",
	"storm.local.hostname", "supervisor.slots.ports", "supervisor.heartbeat.frequency.secs",
	"supervisor.worker.shutdown.sleep.secs", "storm.codedistributor.class", "log.level", "log.format",
	"bittorrent.port", "bittorrent.tracker.url",
	"bittorrent.max.upload.rate", "bittorrent.max.download.rate", "bittorrent.seed.max.peers",
	"supervisor.metrics.port",
}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	cfg, logger, code, ok := daemon.Setup("supervisor", args, stderr, flagKeys)
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
