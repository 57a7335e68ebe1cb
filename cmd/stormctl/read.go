package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func newLeaderCommand(g *globals) *cobra.Command {
	return readCommand(g, "leader", "Show the leader nimbus", (*client.Client).GetLeader,
		func(w io.Writer, resp *nimbusv1.GetLeaderResponse) error {
			return writeNimbuses(w, []*nimbusv1.NimbusSummary{resp.GetLeader()})
		})
}

func newClusterCommand(g *globals) *cobra.Command {
	var summary bool
	pageSize := defaultPageSize
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the nimbuses, supervisors and topologies",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				var resp *nimbusv1.GetClusterInfoResponse
				var err error
				if summary {
					resp, err = c.GetClusterInfo(ctx, client.WithoutSupervisors(), client.WithoutTopologies())
				} else {
					resp, err = clusterInPages(ctx, c, pageSize)
				}
				if err != nil {
					return err
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				if summary {
					return writeClusterSummary(g.stdout, resp.GetCluster())
				}
				return writeCluster(g.stdout, resp.GetCluster())
			})
		},
	}
	cmd.Flags().BoolVar(&summary, "summary", false, "show the nimbuses and the cluster's counts only, without a row per supervisor and topology")
	pageSizeFlag(cmd, &pageSize)
	return cmd
}

// defaultPageSize is how many topologies and supervisors one GetClusterInfo
// call of stormctl asks for: a cluster of thousands comes in several small
// answers rather than one of megabytes.
const defaultPageSize = 500

func pageSizeFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "page-size", *n, "topologies and supervisors per GetClusterInfo call (0: all in one answer)")
}

// clusterInPages is GetClusterInfo with options, read in pages of
// pageSize and joined into one answer.
func clusterInPages(ctx context.Context, c *client.Client, pageSize int, options ...client.ClusterInfoOption) (*nimbusv1.GetClusterInfoResponse, error) {
	if pageSize < 0 {
		return nil, &usageError{fmt.Errorf("--page-size must be 0 or more, got %d", pageSize)}
	}
	var all *nimbusv1.GetClusterInfoResponse
	for page, err := range c.ClusterInfoPages(ctx, pageSize, options...) {
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = page
			continue
		}
		// The nimbuses and counts of the last page are the newest.
		part := page.GetCluster()
		part.Topologies = append(all.GetCluster().GetTopologies(), part.GetTopologies()...)
		part.Supervisors = append(all.GetCluster().GetSupervisors(), part.GetSupervisors()...)
		all = page
	}
	all.NextPageToken = ""
	return all, nil
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
		{"SUPERVISORS", func(w io.Writer) error { return writeSupervisorList(w, s.GetSupervisors()) }},
		{"TOPOLOGIES", func(w io.Writer) error { return writeTopologyList(w, s.GetTopologies()) }},
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

// writeClusterSummary is cluster --summary: the nimbuses, standbys and
// warnings, then the cluster's counts.
func writeClusterSummary(w io.Writer, s *nimbusv1.ClusterSummary) error {
	if err := writeNimbusesAndFailover(w, s); err != nil {
		return err
	}
	if lost := s.GetLostTopologies(); len(lost) > 0 {
		if _, err := fmt.Fprintf(w, "LOST: %s (stormctl list shows why; stormctl admin forget removes one)\n", strings.Join(lost, ", ")); err != nil {
			return err
		}
	}
	return fields(w, [][2]string{
		{"topologies", strconv.Itoa(int(s.GetNumTopologies()))},
		{"supervisors", strconv.Itoa(int(s.GetNumSupervisors()))},
		{"slots used", fmt.Sprintf("%d/%d", s.GetNumUsedSlots(), s.GetNumSlots())},
	})
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
	if problem := s.GetClusterStateProblem(); problem != "" {
		if _, err := fmt.Fprintf(w, "WARNING: %s\n", problem); err != nil {
			return err
		}
	}
	if v := s.GetClusterVersion(); v != "" {
		// The lowest release any daemon runs: what the cluster may do.
		if _, err := fmt.Fprintf(w, "cluster version: %s\n", v); err != nil {
			return err
		}
	}
	for _, t := range s.GetTopologies() {
		if err := writeCodeFate(w, t); err != nil {
			return err
		}
	}
	if blocked := s.GetLeadershipBlockedBy(); len(blocked) > 0 {
		_, err := fmt.Fprintf(w, "WARNING: no live nimbus holds: %s — no failover possible until one does (see README: \"Leadership blocked\")\n",
			strings.Join(blocked, ", "))
		return err
	}
	return nil
}

// writeCodeFate says where a topology's code was recovered from, or that
// it is LOST and how to remove it.
func writeCodeFate(w io.Writer, t *nimbusv1.TopologySummary) error {
	var err error
	switch {
	case t.GetLostReason() != "":
		_, err = fmt.Fprintf(w, "LOST: %s (%s) since %s: %s; it blocks no leadership and is not scheduled (remove it: stormctl admin forget %s)\n",
			t.GetName(), t.GetId(), time.UnixMilli(t.GetLostSinceUnixMs()).Format(time.RFC3339), t.GetLostReason(), t.GetId())
	case t.GetRecoveredFrom() != "":
		_, err = fmt.Fprintf(w, "code of %s (%s) recovered from %s at %s\n",
			t.GetName(), t.GetId(), t.GetRecoveredFrom(), time.UnixMilli(t.GetRecoveredUnixMs()).Format(time.RFC3339))
	}
	return err
}

func newTopologyCommand(g *globals) *cobra.Command {
	var logs, conf bool
	var window string
	cmd := &cobra.Command{
		Use:   "topology NAME",
		Short: "Show a topology: status, code replicas, where its executors run and how its workers fare",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if conf {
				return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
					return showTopologyConf(ctx, g, c, name)
				})
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				var opts []client.TopologyInfoOption
				opts = append(opts, client.WithStatsWindow(window))
				resp, err := c.GetTopologyInfo(ctx, name, opts...)
				if err != nil {
					return &opError{op: "topology " + name, err: err}
				}
				if logs {
					fillLogTails(ctx, g, resp) // from each worker's logviewer (logs.go)
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				if err := writeTopologyInfo(g.stdout, resp); err != nil {
					return err
				}
				if err := writeStats(g.stdout, resp, window); err != nil {
					return err
				}
				return writeWorkers(g.stdout, resp, logs, time.Now())
			})
		},
	}
	cmd.Flags().BoolVar(&logs, "logs", false,
		"show the last lines each worker printed, read from its supervisor's logviewer (not redacted; needs the right to read the topology's logs; stormctl logs shows more)")
	cmd.Flags().BoolVar(&conf, "conf", false,
		"show the topology's effective conf instead: its own over the nimbus's topology.* values, secrets redacted (needs the right to read its conf)")
	cmd.Flags().StringVar(&window, "window", ":all-time",
		"the window of each component's tuple counts, as Storm names it: 600, 10800, 86400 or :all-time")
	cmd.MarkFlagsMutuallyExclusive("conf", "logs")
	return cmd
}

// showTopologyConf is topology --conf: the effective conf as a table of
// key, value and where it came from, or GetTopologyConf's answer in JSON.
func showTopologyConf(ctx context.Context, g *globals, c *client.Client, name string) error {
	resp, err := c.GetTopologyConf(ctx, name)
	if err != nil {
		return &opError{op: "topology " + name + " --conf", err: err}
	}
	if g.output == "json" {
		return writeJSON(g.stdout, resp)
	}
	return writeConfTable(g.stdout, resp.GetEntries())
}

// writeConfTable is a conf's table: KEY, VALUE (redacted values as the nimbus
// sent them), SOURCE.
func writeConfTable(w io.Writer, entries []*nimbusv1.ConfEntry) error {
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, []string{e.GetKey(), e.GetValue(), e.GetSource()})
	}
	return table(w, []string{"KEY", "VALUE", "SOURCE"}, rows)
}

// clusterListCommand lists one part of GetClusterInfo, read in pages, with
// the other parts left out (omit): a table, or in JSON an object with that
// part under key. With only, arguments keep just the items they name.
func clusterListCommand[M proto.Message](g *globals, use, short, key string, omit []client.ClusterInfoOption,
	only func(...string) client.ClusterInfoOption, part func(*nimbusv1.ClusterSummary) []M, write func(io.Writer, []M) error) *cobra.Command {
	pageSize := defaultPageSize
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				options := omit
				if len(args) > 0 {
					options = append(slices.Clip(options), only(args...))
				}
				resp, err := clusterInPages(ctx, c, pageSize, options...)
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
	if only != nil {
		cmd.Args = cobra.ArbitraryArgs
		pageSizeFlag(cmd, &pageSize)
	}
	return cmd
}

func newNimbusesCommand(g *globals) *cobra.Command {
	return clusterListCommand(g, "nimbuses", "List the nimbuses and which one leads", "nimbuses",
		[]client.ClusterInfoOption{client.WithoutSupervisors(), client.WithoutTopologies()}, nil,
		(*nimbusv1.ClusterSummary).GetNimbuses, g.writeNimbusesAndOffline)
}

func newSupervisorsCommand(g *globals) *cobra.Command {
	return clusterListCommand(g, "supervisors [ID|HOST...]", "List the supervisors (all, or those named), their slots and their workers in backoff", "supervisors",
		[]client.ClusterInfoOption{client.WithoutNimbuses(), client.WithoutTopologies()}, client.OnlySupervisors,
		(*nimbusv1.ClusterSummary).GetSupervisors, writeSupervisorList)
}

func newListCommand(g *globals) *cobra.Command {
	return clusterListCommand(g, "list [NAME|ID...]", "List the topologies (all, or those named), their workers running and their status", "topologies",
		[]client.ClusterInfoOption{client.WithoutNimbuses(), client.WithoutSupervisors()}, client.OnlyTopologies,
		(*nimbusv1.ClusterSummary).GetTopologies, writeTopologyList)
}

// writeTopologyList is list's table: the status tells whether every
// assigned worker runs (topologyStatus), WORKERS is running/assigned.
func writeTopologyList(w io.Writer, ts []*nimbusv1.TopologySummary) error {
	rows := make([][]string, 0, len(ts))
	for _, t := range ts {
		rows = append(rows, []string{
			t.GetName(), t.GetId(), topologyStatus(t),
			fmt.Sprintf("%d/%d", t.GetNumWorkersRunning(), t.GetNumWorkersAssigned()),
			strconv.Itoa(int(t.GetNumExecutors())),
			strconv.Itoa(int(t.GetReplicationCount())), uptime(t.GetUptimeSecs()), orDash(t.GetOwner()),
		})
	}
	return table(w, []string{"NAME", "ID", "STATUS", "WORKERS", "EXECUTORS", "REPLICAS", "UPTIME", "OWNER"}, rows)
}

// topologyStatus is a topology's status in words that tell the truth
// about its workers: "active" only when every assigned worker runs and no
// slot is lacking; otherwise the status and what is wrong, as in
// "active, 1/2 workers failing" (in backoff: exited or refused, waiting to
// restart), "active, 1/2 workers starting" (not running yet, and not
// failing), "active, lacks 1 slot" (not enough free slots to place it in
// full). A killed or rebalancing topology is just that; a LOST one says
// so, with why.
func topologyStatus(t *nimbusv1.TopologySummary) string {
	if reason := t.GetLostReason(); reason != "" {
		return "LOST (" + reason + ")"
	}
	status := statusName(t.GetStatus())
	switch t.GetStatus() {
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED, clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
		return status
	}
	parts := []string{status}
	assigned, failing := t.GetNumWorkersAssigned(), t.GetNumWorkersFailing()
	if failing > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d %s failing", failing, assigned, plural(assigned, "worker")))
	}
	if starting := assigned - t.GetNumWorkersRunning() - failing; starting > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d %s starting", starting, assigned, plural(assigned, "worker")))
	}
	if missing := t.GetMissingSlots(); missing > 0 {
		parts = append(parts, fmt.Sprintf("lacks %d %s", missing, plural(missing, "slot")))
	}
	return strings.Join(parts, ", ")
}

func plural(n int32, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// writeSupervisorList is supervisors' table: BACKOFF counts its workers
// that exited or were refused and wait to restart.
func writeSupervisorList(w io.Writer, ss []*nimbusv1.SupervisorSummary) error {
	rows := make([][]string, 0, len(ss))
	for _, s := range ss {
		backoff := 0
		for _, wk := range s.GetWorkers() {
			if wk.GetState() == "backoff" {
				backoff++
			}
		}
		rows = append(rows, []string{
			s.GetSupervisorId(), s.GetHost(), uptime(s.GetUptimeSecs()),
			strconv.Itoa(int(s.GetNumWorkers())), strconv.Itoa(int(s.GetNumUsedWorkers())), strconv.Itoa(backoff),
			orDash(s.GetVersion()), orDash(s.GetRelease()),
		})
	}
	return table(w, []string{"ID", "HOST", "UPTIME", "SLOTS", "USED", "BACKOFF", "VERSION", "RELEASE"}, rows)
}

// writeWorkers writes the WORKERS section of topology: the status in
// words (topologyStatus), then each worker's slot, state, restarts, last
// exit and last error with how long ago; with logs, each log tail.
func writeWorkers(w io.Writer, info *nimbusv1.GetTopologyInfoResponse, logs bool, now time.Time) error {
	if _, err := io.WriteString(w, "\nWORKERS\n"); err != nil {
		return err
	}
	if err := fields(w, [][2]string{{"status", topologyStatus(info.GetTopology())}}); err != nil {
		return err
	}
	rows := make([][]string, 0, len(info.GetWorkers()))
	for _, wk := range info.GetWorkers() {
		when := "-"
		if ms := wk.GetLastErrorUnixMs(); ms > 0 {
			when = uptime(int64(now.Sub(time.UnixMilli(ms))/time.Second)) + " ago"
		}
		rows = append(rows, []string{
			hostPort(wk.GetHost(), wk.GetPort()), orDash(wk.GetState()), strconv.Itoa(int(wk.GetRestarts())),
			lastExit(wk), orDash(oneLine(wk.GetLastError())), when,
		})
	}
	if err := table(w, []string{"HOST:PORT", "STATE", "RESTARTS", "LAST EXIT", "LAST ERROR", "WHEN"}, rows); err != nil {
		return err
	}
	if !logs {
		return nil
	}
	for _, wk := range info.GetWorkers() {
		if wk.GetLogTail() == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "\nLOG %s (last lines, not redacted)\n", hostPort(wk.GetHost(), wk.GetPort())); err != nil {
			return err
		}
		for _, line := range strings.Split(wk.GetLogTail(), "\n") {
			if _, err := fmt.Fprintf(w, "  %s\n", line); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastExit is "exit 3", "signal killed", or "-" for a worker that has not
// exited.
func lastExit(wk *nimbusv1.WorkerSummary) string {
	switch {
	case wk.GetLastExitSignal() != "":
		return "signal " + wk.GetLastExitSignal()
	case wk.LastExitCode != nil:
		return "exit " + strconv.Itoa(int(wk.GetLastExitCode()))
	}
	return "-"
}

// oneLine keeps a table row on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
