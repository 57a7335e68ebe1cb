package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // the command line is wrong
)

const (
	seedsEnv       = "STORM_NIMBUS_SEEDS"
	defaultSeeds   = "localhost:6627"
	defaultTimeout = 10 * time.Second
)

// globals are the flags every command shares.
type globals struct {
	seeds   string
	output  string
	timeout time.Duration
	stdout  io.Writer
}

// usageError marks an error in the command line, which exits 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// run executes one stormctl command line and returns the exit code. Errors
// are one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root := newRootCommand(&globals{stdout: stdout})
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "stormctl: %v (see 'stormctl --help')\n", usage.err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "stormctl: %s\n", describe(err))
	return exitError
}

func newRootCommand(g *globals) *cobra.Command {
	seeds := defaultSeeds
	if env, ok := os.LookupEnv(seedsEnv); ok && env != "" {
		seeds = env
	}
	root := &cobra.Command{
		Use:   "stormctl",
		Short: "Control a Nimbus-HA cluster",
		Long: "stormctl reads and controls a Nimbus-HA cluster. It talks to any of the\n" +
			"seed nimbuses and finds the leader itself.",
		// Any positional argument here is an unknown command; handling it
		// ourselves makes it a usage error rather than cobra's help.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{errors.New("missing command")}
			}
			return &usageError{fmt.Errorf("unknown command %q", args[0])}
		},
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if g.output != "table" && g.output != "json" {
				return &usageError{fmt.Errorf("--output %q: want table or json", g.output)}
			}
			if g.timeout <= 0 {
				return &usageError{fmt.Errorf("--timeout %s: want a positive duration", g.timeout)}
			}
			return nil
		},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })

	f := root.PersistentFlags()
	f.StringVar(&g.seeds, "seeds", seeds, "nimbus addresses, host:port[,host:port...] (env "+seedsEnv+")")
	f.StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	f.DurationVar(&g.timeout, "timeout", defaultTimeout, "time limit of the whole command")

	root.AddCommand(newLeaderCommand(g), newNimbusesCommand(g), newClusterCommand(g))
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
	var seeds []string
	for s := range strings.SplitSeq(g.seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	c, err := client.New(seeds)
	if err != nil {
		return &usageError{fmt.Errorf("--seeds: %w", err)}
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return fn(ctx, c)
}

// describe renders err as the one line stormctl prints.
func describe(err error) string {
	// The client's own message carries a "client:" prefix for logs; a
	// user reads the list of seeds and why each failed.
	if none, ok := err.(*client.NoSeedAnsweredError); ok {
		parts := make([]string, len(none.Failures))
		for i, f := range none.Failures {
			parts[i] = f.String()
		}
		return "no nimbus answered at " + strings.Join(parts, ", ")
	}
	// A server's status, unwrapped: its code and message, without gRPC's
	// "rpc error: code = ... desc = ..." framing.
	if st, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return fmt.Sprintf("%s: %s", st.GRPCStatus().Code(), st.GRPCStatus().Message())
	}
	return err.Error()
}
