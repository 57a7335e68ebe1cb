package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nimbusha/nimbus/worker"
	"github.com/nimbusha/nimbus/workerproto"
)

// The environment a supervisor gives every worker it starts.
const (
	EnvTopologyID = worker.EnvTopologyID
	EnvPort       = worker.EnvPort
	EnvExecutors  = worker.EnvExecutors
	EnvCodeDir    = worker.EnvCodeDir
)

// Exit codes.
const (
	exitOK    = 0 // stopped by a signal (or --help)
	exitError = 1 // the slot port could not be bound, or the listener failed
	exitUsage = 2 // bad flags or environment
)

// errBadFlags wraps a flag parse error that the flag package has already
// printed, with the usage.
var errBadFlags = errors.New("wordcount: bad flags")

// config is what a worker needs to know about itself.
type config struct {
	TopologyID string
	Port       int // 0 picks a free port; the start line says which
	Executors  worker.Executors
	CodeDir    string
	// ReportError, from --report-error, is reported once through the
	// protocol at start: a way to try the error path.
	ReportError string
}

// parseConfig reads flags from args and the STORM_* variables through getenv.
// --port overrides STORM_PORT. Errors name the flag or variable at fault.
// It returns flag.ErrHelp after printing usage for -h/--help, and an error
// wrapping errBadFlags (printed already) for a flag it cannot parse.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("wordcount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: wordcount [--port N] [--report-error MSG]\n\n"+
			"An example topology worker. It reads %s, %s, %s, %s,\n"+
			"%s and %s, listens on 127.0.0.1:PORT and simulates a word count\n"+
			"until SIGTERM or SIGINT; its spouts emit only while its topology is active.\n"+
			"It reports Storm's counters through %s.\n\n",
			EnvTopologyID, EnvPort, EnvExecutors, EnvCodeDir, workerproto.EnvStatusFile, workerproto.EnvErrorFile, workerproto.EnvMetricsFile)
		fs.PrintDefaults()
	}
	port := fs.Int("port", 0, "slot port to listen on; default $"+EnvPort+" (0 picks a free port)")
	reportError := fs.String("report-error", "", "report this error once at start, through $"+workerproto.EnvErrorFile)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("%w: %w", errBadFlags, err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q (want only --port N and --report-error MSG)", fs.Args())
	}

	var cfg config
	portSet := false
	fs.Visit(func(f *flag.Flag) { portSet = portSet || f.Name == "port" })
	switch {
	case portSet:
		if err := checkPort(*port); err != nil {
			return config{}, fmt.Errorf("--port %d: %w", *port, err)
		}
		cfg.Port = *port
	case getenv(EnvPort) != "":
		v := getenv(EnvPort)
		p, err := strconv.Atoi(v)
		if err == nil {
			err = checkPort(p)
		} else {
			err = errors.New("not a number")
		}
		if err != nil {
			return config{}, fmt.Errorf("%s=%q: %w", EnvPort, v, err)
		}
		cfg.Port = p
	default:
		return config{}, fmt.Errorf("no port: pass --port or set %s", EnvPort)
	}

	cfg.TopologyID = getenv(EnvTopologyID)
	if cfg.TopologyID == "" {
		return config{}, fmt.Errorf("%s is not set", EnvTopologyID)
	}
	if strings.ContainsFunc(cfg.TopologyID, isSpaceOrControl) {
		return config{}, fmt.Errorf("%s=%q: must not contain spaces or control characters", EnvTopologyID, cfg.TopologyID)
	}

	v := getenv(EnvExecutors)
	if v == "" {
		return config{}, fmt.Errorf("%s is not set (want component[start-end],...)", EnvExecutors)
	}
	execs, err := worker.ParseExecutors(v)
	if err != nil {
		return config{}, fmt.Errorf("%s=%q: %w", EnvExecutors, v, err)
	}
	cfg.Executors = execs

	cfg.CodeDir = getenv(EnvCodeDir) // informational only
	cfg.ReportError = *reportError
	return cfg, nil
}

func checkPort(p int) error {
	if p < 0 || p > 65535 {
		return errors.New("must be between 0 and 65535")
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
