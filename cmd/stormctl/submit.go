package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// defaultWorkerCommand runs the artifact itself.
const defaultWorkerCommand = "{code_dir}/artifact"

// submitFlags are submit's flags as given.
type submitFlags struct {
	workers       int
	components    []string
	workerCommand string
	conf          []string
	inactive      bool
	owner         string
}

func newSubmitCommand(g *globals) *cobra.Command {
	var sf submitFlags
	cmd := &cobra.Command{
		Use:   "submit NAME ARTIFACT",
		Short: "Upload a topology's artifact and spec to the leader",
		Long: "submit uploads ARTIFACT (a file) with the topology's spec to the leader, and\n" +
			"returns once the leader has stored it and replicated the code to\n" +
			"topology.min.replication.count nimbuses, or its replication wait ended.\n" +
			"Without --timeout there is no time limit but Ctrl-C.\n\n" +
			"The supervisors run each worker as --worker-command, split as a shell would\n" +
			"(quotes and backslashes; no expansion), with {code_dir}, {port} and\n" +
			"{topology_id} substituted.",
		Example: "  stormctl submit wordcount ./wordcount --workers 2 \\\n" +
			"    --component sentences=2 --component count=4 \\\n" +
			"    --worker-command '{code_dir}/artifact --port {port}' --conf topology.debug=true",
		Args: exactArgs("NAME", "ARTIFACT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, path := args[0], args[1]
			spec, err := sf.spec(name)
			if err != nil {
				return err
			}
			f, size, err := openArtifact(path)
			if err != nil {
				return &opError{op: "submit " + name, err: err}
			}
			defer f.Close()

			// The leader answers only once the code is replicated, which
			// may take minutes: the default --timeout does not apply.
			var timeout time.Duration
			if g.timeoutSet {
				timeout = g.timeout
			}
			return g.withClientTimeout(cmd.Context(), timeout, func(ctx context.Context, c *client.Client) error {
				var progress func(sent, total int64)
				var bar *progressBar
				if size > progressMinBytes && g.terminal(g.stderr) {
					bar = &progressBar{w: g.stderr, now: g.now}
					progress = bar.update
				}
				// f is an io.ReadSeeker: the client rewinds it to follow a
				// redirect to the leader.
				resp, err := c.SubmitTopology(ctx, spec, f, size, progress)
				if bar != nil {
					bar.finish()
				}
				if err != nil {
					return submitError(name, err)
				}
				if g.output == "json" {
					err = writeJSON(g.stdout, resp)
				} else {
					err = fields(g.stdout, [][2]string{
						{"topology id", resp.GetTopologyId()},
						{"replication count", strconv.Itoa(int(resp.GetReplicationCount()))},
						{"replication wait timed out", yesNo(resp.GetReplicationWaitTimedOut())},
					})
				}
				if resp.GetReplicationWaitTimedOut() {
					fmt.Fprintf(g.stderr, "WARNING: the replication wait timed out: the code of %s is on %d nimbus(es), "+
						"fewer than topology.min.replication.count; it is lost if they fail before others fetch it\n",
						resp.GetTopologyId(), resp.GetReplicationCount())
				}
				return err
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&sf.workers, "workers", 1, "number of worker processes")
	f.StringArrayVar(&sf.components, "component", nil, "a spout or bolt and its parallelism, ID=PARALLELISM (repeatable; at least one)")
	f.StringVar(&sf.workerCommand, "worker-command", defaultWorkerCommand, "the worker's command line, split with shell quoting rules")
	f.StringArrayVar(&sf.conf, "conf", nil, "a topology config entry, KEY=VALUE (repeatable)")
	f.BoolVar(&sf.inactive, "inactive", false, "submit the topology deactivated (activate it later)")
	f.StringVar(&sf.owner, "owner", os.Getenv("USER"), "the topology's owner ($USER if not given)")
	return cmd
}

// spec checks the flags and builds the topology's spec.
func (sf *submitFlags) spec(name string) (*nimbusv1.TopologySpec, error) {
	workers, err := int32Flag("workers", sf.workers, 1)
	if err != nil {
		return nil, err
	}
	if len(sf.components) == 0 {
		return nil, &usageError{errors.New("submit: at least one --component ID=PARALLELISM is required")}
	}
	counts, err := parseComponents("component", sf.components)
	if err != nil {
		return nil, err
	}
	argv, err := splitCommand(sf.workerCommand)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--worker-command %q: %w", sf.workerCommand, err)}
	}
	if len(argv) == 0 {
		return nil, &usageError{fmt.Errorf("--worker-command %q: empty command", sf.workerCommand)}
	}
	conf, err := parseConf("conf", sf.conf)
	if err != nil {
		return nil, err
	}
	spec := &nimbusv1.TopologySpec{
		Name:          name,
		NumWorkers:    workers,
		WorkerCommand: argv,
		InitialStatus: nimbusv1.InitialStatus_INITIAL_STATUS_ACTIVE,
		Owner:         sf.owner,
	}
	if len(conf) > 0 {
		spec.Config = conf
	}
	if sf.inactive {
		spec.InitialStatus = nimbusv1.InitialStatus_INITIAL_STATUS_INACTIVE
	}
	for _, cc := range counts {
		spec.Components = append(spec.Components, &nimbusv1.ComponentSpec{Id: cc.id, Parallelism: cc.n})
	}
	return spec, nil
}

// openArtifact opens a regular file and returns its size: the client needs
// the size up front, and a file it can rewind.
func openArtifact(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("artifact: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("artifact: %w", err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("artifact %s: not a regular file", path)
	}
	return f, info.Size(), nil
}

// submitError adds, to a failure that may have come after the leader
// stored the topology, how to find out: a submission is never retried
// blindly.
func submitError(name string, err error) error {
	e := &opError{op: "submit " + name, err: err}
	if errors.Is(err, client.ErrNoLeader) || errors.Is(err, client.ErrNoSeedAnswered) {
		return e // nothing was sent
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal:
		e.hint = "it may have been stored: check with 'stormctl topology " + name + "' before submitting again"
	}
	return e
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
