package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
)

// newConfigCommand is config: one nimbus's effective configuration, each
// key's value and where it came from.
func newConfigCommand(g *globals) *cobra.Command {
	var nimbus string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show a nimbus's effective configuration: each key, its value and where it came from (needs nimbus.admins)",
		Long: "config shows the configuration of the nimbus stormctl reaches first, or of\n" +
			"--nimbus: every key, its value (lists comma-separated, durations like 20s,\n" +
			"secrets such as storm.zookeeper.auth.payload as <redacted>) and its source:\n" +
			"default, FILE:LINE, a STORM_* variable or a --flag. With authorization on,\n" +
			"only nimbus.admins may read it.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nimbus != "" {
				g.seeds = nimbus // ask that nimbus alone
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetNimbusConfig(ctx)
				if err != nil {
					return &opError{op: "config", err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				if _, err := fmt.Fprintf(g.stdout, "NIMBUS %s\n", resp.GetNimbus()); err != nil {
					return err
				}
				return writeConfTable(g.stdout, resp.GetEntries())
			})
		},
	}
	cmd.Flags().StringVar(&nimbus, "nimbus", "", "the nimbus to ask, host[:port] (default: the first seed that answers)")
	return cmd
}
