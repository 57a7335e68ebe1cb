package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// newSetLogLevelCommand is set-log-level: Storm's set_log_level, a
// topology's named loggers set (for a while) or removed.
func newSetLogLevelCommand(g *globals) *cobra.Command {
	var remove []string
	var reset string
	cmd := &cobra.Command{
		Use:   "set-log-level TOPOLOGY [LOGGER=LEVEL[:TIMEOUT_SECS] ...] [-r LOGGER ...]",
		Short: "Set or remove a topology's log levels (for a while, with a timeout)",
		Long: `Set or remove log levels of a topology's workers, as Storm's set_log_level does.
LOGGER is a dotted logger name, ROOT for the root logger; LEVEL one of ALL, TRACE, DEBUG,
INFO, WARN, ERROR, FATAL, OFF. After TIMEOUT_SECS the logger goes back to --reset-level, or,
without one, to the worker's own default. Supervisors apply the levels and their timeouts,
so they hold across nimbus failovers and reach workers started later.`,
		Example: `  stormctl set-log-level wordcount ROOT=DEBUG:60
  stormctl set-log-level wordcount com.example.split=TRACE:300 --reset-level INFO
  stormctl set-log-level wordcount -r com.example.split`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{fmt.Errorf("set-log-level: missing TOPOLOGY")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := logConfigRequest(args[0], args[1:], remove, reset)
			if err != nil {
				return &usageError{err}
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.SetLogConfig(ctx, req)
				if err != nil {
					return &opError{op: "set-log-level " + req.GetName(), err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				return writeLogLevels(g.stdout, resp.GetLogLevels(), time.Now())
			})
		},
	}
	cmd.Flags().StringArrayVarP(&remove, "remove", "r", nil, "a logger to remove (repeatable)")
	cmd.Flags().StringVar(&reset, "reset-level", "", "the level the loggers set take when their timeout ends (default: none, the worker's own)")
	return cmd
}

// logConfigRequest reads set-log-level's arguments into a request,
// checked as the nimbus checks it.
func logConfigRequest(name string, settings, remove []string, reset string) (*nimbusv1.SetLogConfigRequest, error) {
	req := &nimbusv1.SetLogConfigRequest{Name: name, Set: map[string]*clusterv1.LoggerLevel{}, Remove: remove}
	for _, s := range settings {
		logger, level, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want LOGGER=LEVEL[:TIMEOUT_SECS]", s)
		}
		l := &clusterv1.LoggerLevel{TargetLevel: level, ResetLevel: reset}
		if lvl, secs, ok := strings.Cut(level, ":"); ok {
			n, err := strconv.ParseInt(secs, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%q: TIMEOUT_SECS %q is not a whole number of seconds", s, secs)
			}
			l.TargetLevel, l.TimeoutSecs = lvl, int32(n)
		}
		if _, dup := req.Set[logger]; dup {
			return nil, fmt.Errorf("logger %q is set twice", logger)
		}
		req.Set[logger] = l
	}
	if err := validate.SetLogConfig(req); err != nil {
		return nil, err
	}
	return req, nil
}

// writeLogLevels prints a topology's log levels, one logger a line.
func writeLogLevels(w io.Writer, levels map[string]*clusterv1.LoggerLevel, now time.Time) error {
	if len(levels) == 0 {
		_, err := fmt.Fprintln(w, "no log levels set")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOGGER\tLEVEL\tUNTIL\tTHEN")
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		l := levels[name]
		until, then := "-", "-"
		if ms := l.GetTimeoutUnixMs(); ms != 0 {
			until = fmt.Sprintf("%s (in %s)", time.UnixMilli(ms).Format(time.TimeOnly), time.UnixMilli(ms).Sub(now).Round(time.Second))
			then = cmp.Or(l.GetResetLevel(), "the worker's default")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, l.GetTargetLevel(), until, then)
	}
	return tw.Flush()
}
