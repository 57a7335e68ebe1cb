// Command nimbus runs one nimbus daemon: see package nimbus.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/nimbus"
)

// flagKeys are the configuration keys that also have a flag.
var flagKeys = []string{
	"storm.zookeeper.servers", "storm.zookeeper.port", "storm.zookeeper.root",
	"storm.zookeeper.session.timeout", "storm.zookeeper.connection.timeout", "storm.local.dir",
	"nimbus.host", "nimbus.grpc.port", "nimbus.metrics.port",
	"storm.codedistributor.class", "log.level", "log.format",
	"topology.min.replication.count", "topology.max.replication.wait.time.sec",
	"nimbus.code.sync.freq.secs", "nimbus.max.artifact.bytes", "topology.message.timeout.secs",
	"nimbus.monitor.freq.secs", "nimbus.supervisor.timeout.secs", "bittorrent.port", "bittorrent.tracker.url",
	"bittorrent.max.upload.rate", "bittorrent.max.download.rate", "bittorrent.seed.max.peers",
}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	cfg, logger, code, ok := daemon.Setup("nimbus", args, stderr, flagKeys)
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
