package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The commands that change a running topology, by name, at the leader.
// Their RPCs answer with empty messages. The table output is one
// confirmation line; -o json prints the topology as the change left it
// (result).

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

// serverWait is the wait the server gives an action on topology name
// without --wait (wait nil): the topology's topology.message.timeout.secs,
// read before the action so that the confirmation says the seconds; nil
// if it cannot be read (the confirmation then names the key).
func serverWait(ctx context.Context, c *client.Client, name string, wait *int32) *int32 {
	if wait != nil {
		return wait
	}
	conf, err := c.GetTopologyConf(ctx, name)
	if err != nil {
		return nil
	}
	for _, e := range conf.GetEntries() {
		if e.GetKey() != configs.KeyTopologyMessageTimeout {
			continue
		}
		if n, err := strconv.ParseInt(e.GetValue(), 10, 32); err == nil && n >= 0 {
			secs := int32(n)
			return &secs
		}
	}
	return nil
}

// result writes line, or with -o json the topology's summary as the
// change left it: read after the change (any nimbus answers reads, and its
// view may lag the leader's write by a moment), with the status the
// change set, which the leader's answer says is stored. A topology killed
// with no wait may be gone already: its summary is then its name and
// status. If the read fails otherwise, the change still happened: the
// summary is the name and status, and a warning says why the rest is
// missing.
func (g *globals) result(ctx context.Context, c *client.Client, name string, to clusterv1.TopologyStatus, line string) error {
	if g.output != "json" {
		_, err := fmt.Fprintln(g.stdout, line)
		return err
	}
	sum := &nimbusv1.TopologySummary{Name: name}
	info, err := c.GetTopologyInfo(ctx, name)
	switch {
	case err == nil && info.GetTopology() != nil:
		sum = proto.CloneOf(info.GetTopology())
	case err == nil, status.Code(err) == codes.NotFound && to == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED:
	default:
		fmt.Fprintf(g.stderr, "stormctl: warning: %s is %s, but reading it back failed: %s\n", name, statusName(to), describe(err))
	}
	sum.Status = to
	return writeJSON(g.stdout, sum)
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
				shown := serverWait(ctx, c, name, waitSecs)
				err := c.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: waitSecs})
				if err != nil {
					return &opError{op: "kill " + name, err: err}
				}
				return g.result(ctx, c, name, clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED,
					fmt.Sprintf("killed %s (%s)", name, afterWait("removal", shown)))
			})
		},
	}
	cmd.Flags().IntVarP(&wait, "wait", "w", 0, waitFlagUsage)
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
				return g.result(ctx, c, name, clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, "activated "+name)
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
				return g.result(ctx, c, name, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE, "deactivated "+name)
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
		Long: "rebalance moves a topology to rebalancing for the wait, then reschedules it,\n" +
			"with --workers and --component parallelism if given (absent components keep\n" +
			"theirs). With neither, it only spreads the executors again. Storm's short\n" +
			"forms work: rebalance NAME -w 10 -n 4 -e split=8.",
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
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				changes = append(changes, afterWait("rescheduling", serverWait(ctx, c, name, req.WaitSecs)))
				if err := c.RebalanceTopology(ctx, req); err != nil {
					return &opError{op: "rebalance " + name, err: err}
				}
				return g.result(ctx, c, name, clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING,
					fmt.Sprintf("rebalancing %s (%s)", name, strings.Join(changes, ", ")))
			})
		},
	}
	f := cmd.Flags()
	f.IntVarP(&wait, "wait", "w", 0, waitFlagUsage)
	f.IntVarP(&workers, "workers", "n", 0, "new number of workers (default: keep)")
	f.StringArrayVarP(&components, "component", "e", nil, "new parallelism of a component, ID=N (repeatable)")
	return cmd
}
