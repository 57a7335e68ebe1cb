package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func newLeaderCommand(g *globals) *cobra.Command {
	return readCommand(g, "leader", "Show the leader nimbus", (*client.Client).GetLeader,
		func(w io.Writer, resp *nimbusv1.GetLeaderResponse) error {
			return writeNimbuses(w, []*nimbusv1.NimbusSummary{resp.GetLeader()})
		})
}

func newClusterCommand(g *globals) *cobra.Command {
	return readCommand(g, "cluster", "Show the nimbuses, supervisors and topologies", (*client.Client).GetClusterInfo,
		func(w io.Writer, resp *nimbusv1.GetClusterInfoResponse) error {
			return writeCluster(w, resp.GetCluster())
		})
}

// readCommand reads one answer and writes it: as JSON with -o json, as
// table writes it otherwise.
func readCommand[M proto.Message](g *globals, use, short string,
	read func(*client.Client, context.Context) (M, error), table func(io.Writer, M) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := read(c, ctx)
				if err != nil {
					return err
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				return table(g.stdout, resp)
			})
		},
	}
}

// writeCluster writes the summary as three titled tables.
func writeCluster(w io.Writer, s *nimbusv1.ClusterSummary) error {
	sections := []struct {
		title string
		write func(io.Writer) error
	}{
		{"NIMBUSES", func(w io.Writer) error { return writeNimbusesAndFailover(w, s) }},
		{"SUPERVISORS", func(w io.Writer) error { return writeSupervisors(w, s.GetSupervisors()) }},
		{"TOPOLOGIES", func(w io.Writer) error { return writeTopologies(w, s.GetTopologies()) }},
	}
	for i, sec := range sections {
		sep := "\n"
		if i == 0 {
			sep = ""
		}
		if _, err := io.WriteString(w, sep+sec.title+"\n"); err != nil {
			return err
		}
		if err := sec.write(w); err != nil {
			return err
		}
	}
	return nil
}

// writeNimbusesAndFailover writes the nimbuses table, then how many
// standbys could take over, and a warning when none can.
func writeNimbusesAndFailover(w io.Writer, s *nimbusv1.ClusterSummary) error {
	if err := writeNimbuses(w, s.GetNimbuses()); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "eligible standbys: %d\n", s.GetEligibleStandbys()); err != nil {
		return err
	}
	if blocked := s.GetLeadershipBlockedBy(); len(blocked) > 0 {
		_, err := fmt.Fprintf(w, "WARNING: no live nimbus holds: %s — no failover possible until one does (see README: \"Leadership blocked\")\n",
			strings.Join(blocked, ", "))
		return err
	}
	return nil
}

func newTopologyCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "topology NAME",
		Short: "Show a topology: status, code replicas and where its executors run",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetTopologyInfo(ctx, name)
				if err != nil {
					return &opError{op: "topology " + name, err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				return writeTopologyInfo(g.stdout, resp)
			})
		},
	}
}

// clusterListCommand lists one part of GetClusterInfo: a table, or in JSON
// an object with that part under key.
func clusterListCommand[M proto.Message](g *globals, use, short, key string,
	part func(*nimbusv1.ClusterSummary) []M, write func(io.Writer, []M) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetClusterInfo(ctx)
				if err != nil {
					return err
				}
				items := part(resp.GetCluster())
				if g.output == "json" {
					return writeJSONList(g.stdout, key, items)
				}
				return write(g.stdout, items)
			})
		},
	}
}

func newNimbusesCommand(g *globals) *cobra.Command {
	return clusterListCommand(g, "nimbuses", "List the nimbuses and which one leads", "nimbuses",
		(*nimbusv1.ClusterSummary).GetNimbuses, writeNimbuses)
}

func newSupervisorsCommand(g *globals) *cobra.Command {
	return clusterListCommand(g, "supervisors", "List the supervisors and their slots", "supervisors",
		(*nimbusv1.ClusterSummary).GetSupervisors, writeSupervisors)
}

func newListCommand(g *globals) *cobra.Command {
	return clusterListCommand(g, "list", "List the topologies", "topologies",
		(*nimbusv1.ClusterSummary).GetTopologies, writeTopologies)
}
