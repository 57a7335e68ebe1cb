// Package daemon holds what every daemon shares: what its main does
// before it starts (flags, configuration with flags > env > file >
// defaults, checked against the registered code distributors, the logger)
// and what its metrics port serves.
package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/backends" // the classes CheckClass knows
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/logging"
)

// Setup parses args for the daemon called name, with a flag for each of
// keys, and returns its validated configuration and logger. When it
// cannot (a usage or configuration error, or --help) it has already told
// the user on stderr, and returns ok false with the exit code.
func Setup(name string, args []string, stderr io.Writer, keys []string) (cfg *configs.Config, log *slog.Logger, code int, ok bool) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s [--config FILE] [flags]\n\nFlags override STORM_* environment variables, which override the file.\n\n%s", name, fs.FlagUsages())
	}
	configs.RegisterFlags(fs, keys...)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil, 0, false
		}
		return nil, nil, 2, false
	}
	cfg, warnings, err := configs.Load(fs)
	if err == nil {
		err = cfg.ValidateServer()
	}
	if err == nil {
		err = codedistributor.CheckClass(cfg.CodeDistributorClass) // before anything touches ZooKeeper
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, 2, false
	}
	log, err = logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, 2, false
	}
	for _, w := range warnings {
		log.Warn("configuration", "warning", w)
	}
	return cfg, log, 0, true
}

// SessionConfig is how the daemon described by cfg reaches ZooKeeper: the
// servers, the session, the root, and the digest credentials that give the
// nodes it creates their ACL.
func SessionConfig(cfg *configs.Config, log *slog.Logger) cluster.SessionConfig {
	return cluster.SessionConfig{
		Servers:        cfg.ZKServers(),
		SessionTimeout: cfg.ZKSessionTimeout,
		ConnectTimeout: cfg.ZKConnectionTimeout,
		Root:           cfg.ZKRoot,
		AuthScheme:     cfg.ZKAuthScheme,
		AuthPayload:    cfg.ZKAuthPayload,
		SuperACL:       cfg.ZKSuperACL,
		Logger:         log,
	}
}
