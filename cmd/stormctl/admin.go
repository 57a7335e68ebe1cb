package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
)

func newAdminCommand(g *globals) *cobra.Command {
	return commandGroup("admin", "Operations for nimbus.admins: repairs, leadership", newForgetCommand(g), newHandOverCommand(g))
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

// newHandOverCommand is admin handover: move leadership on purpose, say to
// the first nimbus upgraded before the others restart.
func newHandOverCommand(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "handover [--to HOST:PORT]",
		Short: "Hand leadership to the named nimbus, or to the next one that holds every live topology's code",
		Long: "Hand leadership over on purpose: to the nimbus at --to, or to the next one queued that holds the code of every live topology. " +
			"It is refused, saying why, for a nimbus that is unknown, not registered, not queued or missing code. " +
			"It returns once the new leader acts, and says how long the cluster had no leader. Audited on the leader.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.HandOver(ctx, to)
				if err != nil {
					return &opError{op: "admin handover", err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				if resp.GetFrom() == resp.GetTo() {
					_, err = fmt.Fprintf(g.stdout, "%s leads already (epoch %d); nothing to do\n", resp.GetTo(), resp.GetToEpoch())
					return err
				}
				_, err = fmt.Fprintf(g.stdout, "handed leadership from %s (epoch %d) to %s (epoch %d); %d ms without a leader\n",
					resp.GetFrom(), resp.GetFromEpoch(), resp.GetTo(), resp.GetToEpoch(), resp.GetLeaderlessMs())
				return err
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "HOST:PORT of the nimbus to lead (default: the next one that holds all code)")
	return cmd
}
