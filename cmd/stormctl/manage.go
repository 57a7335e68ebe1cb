package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The commands that change a running topology, by name, at the leader.
// Their RPCs answer with empty messages, which -o json prints as {}; the
// table output is one confirmation line.

// waitFlagUsage is --wait's help; which delay the server uses when the
// flag is not given.
const waitFlagUsage = "seconds to wait before acting (default: the server's topology.message.timeout.secs)"

// afterWait describes when a delayed action happens.
func afterWait(verb string, wait *int32) string {
	if wait == nil {
		return verb + " after topology.message.timeout.secs"
	}
	return fmt.Sprintf("%s in %ds", verb, *wait)
}

// confirm writes the empty response as JSON, or line as the table output.
func (g *globals) confirm(resp proto.Message, line string) error {
	if g.output == "json" {
		return writeJSON(g.stdout, resp)
	}
	_, err := fmt.Fprintln(g.stdout, line)
	return err
}

func newKillCommand(g *globals) *cobra.Command {
	var wait int
	cmd := &cobra.Command{
		Use:   "kill NAME",
		Short: "Kill a topology: deactivate it now, remove it after the wait",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			waitSecs, err := optionalInt32(cmd, "wait", wait, 0)
			if err != nil {
				return err
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				err := c.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: waitSecs})
				if err != nil {
					return &opError{op: "kill " + name, err: err}
				}
				return g.confirm(&nimbusv1.KillTopologyResponse{},
					fmt.Sprintf("killed %s (%s)", name, afterWait("removal", waitSecs)))
			})
		},
	}
	cmd.Flags().IntVar(&wait, "wait", 0, waitFlagUsage)
	return cmd
}

func newActivateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "activate NAME",
		Short: "Activate a topology (its spouts emit again)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				if err := c.ActivateTopology(ctx, name); err != nil {
					return &opError{op: "activate " + name, err: err}
				}
				return g.confirm(&nimbusv1.ActivateTopologyResponse{}, "activated "+name)
			})
		},
	}
}

func newDeactivateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "deactivate NAME",
		Short: "Deactivate a topology (its spouts stop emitting; workers keep running)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				if err := c.DeactivateTopology(ctx, name); err != nil {
					return &opError{op: "deactivate " + name, err: err}
				}
				return g.confirm(&nimbusv1.DeactivateTopologyResponse{}, "deactivated "+name)
			})
		},
	}
}

func newRebalanceCommand(g *globals) *cobra.Command {
	var (
		wait, workers int
		components    []string
	)
	cmd := &cobra.Command{
		Use:   "rebalance NAME",
		Short: "Reschedule a topology, optionally with new workers or parallelism",
		Long: "rebalance moves a topology to REBALANCING for the wait, then reschedules it,\n" +
			"with --workers and --component parallelism if given (absent components keep\n" +
			"theirs). With neither, it only spreads the executors again.",
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			req := &nimbusv1.RebalanceTopologyRequest{Name: name}
			var err error
			if req.WaitSecs, err = optionalInt32(cmd, "wait", wait, 0); err != nil {
				return err
			}
			if req.NumWorkers, err = optionalInt32(cmd, "workers", workers, 1); err != nil {
				return err
			}
			counts, err := parseComponents("component", components)
			if err != nil {
				return err
			}
			var changes []string
			if req.NumWorkers != nil {
				changes = append(changes, fmt.Sprintf("workers=%d", *req.NumWorkers))
			}
			if len(counts) > 0 {
				req.ComponentParallelism = make(map[string]int32, len(counts))
			}
			for _, cc := range counts {
				req.ComponentParallelism[cc.id] = cc.n
				changes = append(changes, fmt.Sprintf("%s=%d", cc.id, cc.n))
			}
			changes = append(changes, afterWait("rescheduling", req.WaitSecs))
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				if err := c.RebalanceTopology(ctx, req); err != nil {
					return &opError{op: "rebalance " + name, err: err}
				}
				return g.confirm(&nimbusv1.RebalanceTopologyResponse{},
					fmt.Sprintf("rebalancing %s (%s)", name, strings.Join(changes, ", ")))
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&wait, "wait", 0, waitFlagUsage)
	f.IntVar(&workers, "workers", 0, "new number of workers (default: keep)")
	f.StringArrayVar(&components, "component", nil, "new parallelism of a component, ID=N (repeatable)")
	return cmd
}
