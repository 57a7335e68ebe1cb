package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
)

func newAdminCommand(g *globals) *cobra.Command {
	return commandGroup("admin", "Repairs for nimbus.admins that work without a leader", newForgetCommand(g))
}

// newForgetCommand is admin forget: remove a topology marked LOST, through
// any nimbus, leader or not.
func newForgetCommand(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "forget TOPOLOGY",
		Short: "Remove a topology marked LOST (no nimbus and no supervisor holds its code); works with no leader",
		Long: "Remove a topology marked LOST: its code is held by no nimbus and no supervisor, so it can never run again. " +
			"Any nimbus does it, with or without a leader; it is refused for a topology that is not LOST (kill that instead). " +
			"Audited on the nimbus that answers.",
		Args: exactArgs("TOPOLOGY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.ForgetTopology(ctx, name, reason)
				if err != nil {
					return &opError{op: "admin forget " + name, err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				how := "without a leader's fence (no nimbus led)"
				if resp.GetFenced() {
					how = "fenced by the leader's term"
				}
				_, err = fmt.Fprintf(g.stdout, "forgot %s (%s), %s\n", name, resp.GetTopologyId(), how)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	return cmd
}
