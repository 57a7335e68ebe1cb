package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/version"
)

const (
	seedsEnv       = "STORM_NIMBUS_SEEDS" // configs.EnvName(configs.KeyNimbusSeeds)
	defaultTimeout = 10 * time.Second
)

// globals are the flags every command shares, and what the commands write
// to.
type globals struct {
	flags      *pflag.FlagSet // the root's: --config and the keys stormctl takes
	seeds      string
	seedsUsed  []string // the seeds the last client was made for (withClientTimeout)
	output     string
	timeout    time.Duration
	timeoutSet bool // --timeout was given (submit has no time limit otherwise)

	stdin          io.Reader // nil: os.Stdin
	stdout, stderr io.Writer
	terminal       func(io.Writer) bool // whether a person watches this writer
	now            func() time.Time
}

// usageError marks an error in the command line, which exits 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// run executes one stormctl command line and returns the exit code. Errors
// are one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	return execute(args, &globals{stdout: stdout, stderr: stderr, terminal: isTerminal, now: time.Now})
}

// execute is run with the writers, terminal test and clock in g, so tests
// can stand in for a terminal.
func execute(args []string, g *globals) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root := newRootCommand(g)
	root.SetArgs(args)
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	exit := exitCode(err)
	line := describe(err)
	var usage *usageError
	if errors.As(err, &usage) {
		line = usage.err.Error() + " (see 'stormctl --help')"
	}
	if g.output == "json" {
		if werr := writeJSONError(g.stderr, err, line, exit); werr == nil {
			return exit
		}
	}
	fmt.Fprintf(g.stderr, "stormctl: %s\n", line)
	return exit
}

func newRootCommand(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "stormctl",
		Short: "Control a Nimbus-HA cluster",
		Long: "stormctl reads and controls a Nimbus-HA cluster. It talks to any of the\n" +
			"seed nimbuses and finds the leader itself.\n\n" +
			"Its keys (nimbus.seeds, the TLS keys) come from --config, else\n" +
			"$STORM_CONF_DIR/storm.yaml, else ~/.storm/storm.yaml, the first that exists;\n" +
			"STORM_* variables and flags override them. A seed without a port uses 6627.\n\n" +
			exitCodesHelp,
		// Any positional argument here is an unknown command; handling it
		// ourselves makes it a usage error rather than cobra's help.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{errors.New("missing command")}
			}
			if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
				return &usageError{fmt.Errorf("unknown command %q; did you mean %q?", args[0], suggestions[0])}
			}
			return &usageError{fmt.Errorf("unknown command %q (stormctl --help lists them)", args[0])}
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if g.output != "table" && g.output != "json" {
				return &usageError{fmt.Errorf("--output %q: want table or json", g.output)}
			}
			if g.timeout <= 0 {
				return &usageError{fmt.Errorf("--timeout %s: want a positive duration", g.timeout)}
			}
			g.timeoutSet = cmd.Flags().Changed("timeout")
			return nil
		},
		SilenceErrors:              true,
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2, // a typo of a letter or two, as flags get (configs.SuggestFlag)
		CompletionOptions:          cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{configs.SuggestFlag(cmd.Flags(), err)} })
	// --version prints the version line (cobra's flag, without the -v it
	// would add: that letter stays free).
	root.Version = version.String("stormctl")
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version and exit")

	f := root.PersistentFlags()
	g.flags = f
	f.StringVar(&g.seeds, "seeds", "", "nimbus addresses, host[:port][,...] (default: nimbus.seeds from the config file or env "+seedsEnv+", else localhost:6627)")
	// The same keys as the daemons, from --config, STORM_* or these flags.
	configs.RegisterFlags(f, configs.ClientFlagKeys()...)
	// --nimbus.seeds is --seeds under the key's name: it works, but help
	// lists one of the two.
	_ = f.MarkHidden(configs.KeyNimbusSeeds)
	f.StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	f.DurationVar(&g.timeout, "timeout", defaultTimeout, "time limit of the whole command (submit: none unless given)")

	root.AddCommand(
		newLeaderCommand(g), newNimbusesCommand(g), newSupervisorsCommand(g), newClusterCommand(g),
		newListCommand(g), newTopologyCommand(g), newConfigCommand(g),
		newLogsCommand(g),
		newSubmitCommand(g), newKillCommand(g), newActivateCommand(g), newDeactivateCommand(g),
		newRebalanceCommand(g), newRestartWorkerCommand(g), newSetLogLevelCommand(g), newAdminCommand(g),
		newTLSCommand(g), newVersionCommand(g), newUICommand(g), newBlobstoreCommand(g),
	)
	return root
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.Name(), args[0])}
	}
	return nil
}

// withClient runs fn with a client for --seeds under --timeout.
func (g *globals) withClient(ctx context.Context, fn func(context.Context, *client.Client) error) error {
	return g.withClientTimeout(ctx, g.timeout, fn)
}

// withClientTimeout runs fn with a client for the seeds (--seeds, else
// nimbus.seeds) under timeout; zero means no time limit but the caller's
// (Ctrl-C). The client speaks TLS as the configuration says.
func (g *globals) withClientTimeout(ctx context.Context, timeout time.Duration, fn func(context.Context, *client.Client) error) error {
	cfg, seeds, err := g.clientConfig()
	if err != nil {
		return err
	}
	tlsm, err := certs.FromConfig(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	c, err := client.New(seeds, client.WithTransportCredentials(tlsm.ClientCredentials()))
	if err != nil {
		return &usageError{fmt.Errorf("--seeds: %w", err)}
	}
	defer c.Close()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return g.whereFrom(fn(ctx, c), cfg)
}

// whereFrom adds, to an error that met a port which is not a nimbus's
// gRPC port as this client speaks to it (client.PortMismatchError), where
// the seeds and the TLS setting came from: the file, variable or flag to
// change.
func (g *globals) whereFrom(err error, cfg *configs.Config) error {
	var pm *client.PortMismatchError
	if !errors.As(err, &pm) {
		return err
	}
	seeds := "nimbus.seeds from " + cfg.Sources[configs.KeyNimbusSeeds].String()
	if g.seeds != "" {
		seeds = "seeds from --seeds"
	}
	tlsOn := "off"
	if cfg.TLSEnable {
		tlsOn = "on"
	}
	return &hinted{err: err, hint: fmt.Sprintf("%s; %s %s from %s", seeds, configs.KeyTLSEnable, tlsOn, cfg.Sources[configs.KeyTLSEnable])}
}

// hinted is an error with a hint for what to do about it.
type hinted struct {
	err  error
	hint string
}

func (e *hinted) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e *hinted) Unwrap() error { return e.err }

// clientConfig is the configuration a client of this command line uses
// (--config, else the default file; STORM_*; flags) and its seeds
// (--seeds, else nimbus.seeds).
func (g *globals) clientConfig() (*configs.Config, []string, error) {
	if err := g.defaultConfig(); err != nil {
		return nil, nil, err
	}
	cfg, _, err := configs.Load(g.flags)
	if err != nil {
		return nil, nil, &usageError{err}
	}
	seeds := cfg.SeedAddrs()
	if g.seeds != "" {
		seeds = nil
		for s := range strings.SplitSeq(g.seeds, ",") {
			if s = strings.TrimSpace(s); s != "" {
				seeds = append(seeds, s)
			}
		}
	}
	g.seedsUsed = seeds
	return cfg, seeds, nil
}

// confDirEnv names the directory of Storm's storm.yaml, as Storm's own
// scripts use it.
const confDirEnv = "STORM_CONF_DIR"

// defaultConfig points --config, when it is not given, at the file a
// Storm client would read: $STORM_CONF_DIR/storm.yaml, else
// ~/.storm/storm.yaml, the first that exists. The environment and flags
// still override its keys.
func (g *globals) defaultConfig() error {
	if f := g.flags.Lookup(configs.ConfigFlag); f == nil || f.Changed {
		return nil
	}
	var candidates []string
	if dir := os.Getenv(confDirEnv); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "storm.yaml"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".storm", "storm.yaml"))
	}
	for _, path := range candidates {
		if _, err := os.Stat(path); err == nil {
			return g.flags.Set(configs.ConfigFlag, path)
		}
	}
	return nil
}

// opError says what a command was doing when err happened, such as "kill
// wordcount", and may add a hint for what to do about it.
type opError struct {
	op   string
	err  error
	hint string
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// describe renders err as the one line stormctl prints.
func describe(err error) string {
	if op, ok := err.(*opError); ok {
		s := op.op + ": " + describe(op.err)
		if op.hint != "" {
			s += " (" + op.hint + ")"
		}
		return s
	}
	if h, ok := err.(*hinted); ok {
		return describe(h.err) + " (" + h.hint + ")"
	}
	// The client's own message carries a "client:" prefix for logs; a
	// user reads the list of seeds and why each failed.
	if none, ok := err.(*client.NoSeedAnsweredError); ok {
		parts := make([]string, len(none.Failures))
		for i, f := range none.Failures {
			parts[i] = f.String()
		}
		return "no nimbus answered at " + strings.Join(parts, ", ")
	}
	// A server's status, unwrapped: its message in plain words
	// (apistatus.Message, as the REST API says it; the exit code and the
	// JSON error carry the code), with enum values as the tables' words.
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return plainWords(apistatus.Message(err))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within --timeout"
	}
	return err.Error()
}
