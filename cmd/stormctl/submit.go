package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// defaultWorkerCommand runs the artifact itself.
const defaultWorkerCommand = "{code_dir}/artifact"

// submitFlags are submit's flags as given.
type submitFlags struct {
	file          string
	name          string
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
		Use:   "submit NAME ARTIFACT | submit -f FILE [ARTIFACT]",
		Short: "Upload a topology's artifact and spec to the leader",
		Long: "submit uploads ARTIFACT (a file) with the topology's spec to the leader, and\n" +
			"returns once the leader has stored it and replicated the code to\n" +
			"topology.min.replication.count nimbuses, or its replication wait ended.\n" +
			"Without --timeout there is no time limit but Ctrl-C.\n\n" +
			"The supervisors run each worker as --worker-command, split as a shell would\n" +
			"(quotes and backslashes; no expansion), with {code_dir}, {port} and\n" +
			"{topology_id} substituted; any other {name} is refused.\n\n" +
			"With -f the topology is described by a file (see examples/wordcount/topology.yaml):\n" +
			"name, artifact (relative to the file), workerCommand, config, and spouts and\n" +
			"bolts, each an id and a parallelism. Flags override the file: ARTIFACT its\n" +
			"artifact, --name its name, --workers and --conf topology.workers its\n" +
			"config topology.workers (--workers wins), --conf KEY=VALUE its config KEY,\n" +
			"--component ID=N the parallelism of its component ID, --worker-command its\n" +
			"workerCommand.",
		Example: "  stormctl submit wordcount ./wordcount --workers 2 \\\n" +
			"    --component split=2 --component count=4 \\\n" +
			"    --worker-command '{code_dir}/artifact --port {port}' --conf topology.debug=true\n" +
			"  stormctl submit -f examples/wordcount/topology.yaml bin/wordcount --component count=6",
		Args: sf.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, path, err := sf.build(cmd, args)
			if err != nil {
				return err
			}
			name := spec.GetName()
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
	f.StringVarP(&sf.file, "file", "f", "", "a topology file (YAML) describing the topology; the flags below override it")
	f.StringVar(&sf.name, "name", "", "with -f: the topology's name, instead of the file's")
	f.IntVar(&sf.workers, "workers", 1, "number of worker processes (with -f: instead of the file's config topology.workers)")
	f.StringArrayVar(&sf.components, "component", nil, "a spout or bolt and its parallelism, ID=PARALLELISM (repeatable; at least one without -f; with -f: one of the file's)")
	f.StringVar(&sf.workerCommand, "worker-command", defaultWorkerCommand, "the worker's command line, split with shell quoting rules (with -f: instead of the file's)")
	f.StringArrayVar(&sf.conf, "conf", nil, "a topology config entry, KEY=VALUE (repeatable; with -f: instead of the file's entry)")
	f.BoolVar(&sf.inactive, "inactive", false, "submit the topology deactivated (activate it later)")
	f.StringVar(&sf.owner, "owner", os.Getenv("USER"), "the topology's owner ($USER if not given)")
	return cmd
}

// args accepts NAME ARTIFACT, or with -f at most ARTIFACT.
func (sf *submitFlags) args(cmd *cobra.Command, args []string) error {
	if sf.file == "" {
		return exactArgs("NAME", "ARTIFACT")(cmd, args)
	}
	if len(args) > 1 {
		return &usageError{fmt.Errorf("submit -f FILE takes at most ARTIFACT (the name is the file's, or --name), got an extra argument %q", args[1])}
	}
	return nil
}

// build checks the command line and returns the topology's spec and the
// artifact's path, from the flags or, with -f, from the file and the flags.
func (sf *submitFlags) build(cmd *cobra.Command, args []string) (*nimbusv1.TopologySpec, string, error) {
	if sf.file != "" {
		return sf.fromFile(cmd, args)
	}
	if cmd.Flags().Changed("name") {
		return nil, "", &usageError{errors.New("--name is for -f: without it, NAME is the first argument")}
	}
	spec, err := sf.spec(args[0])
	return spec, args[1], err
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
	argv, err := sf.argv()
	if err != nil {
		return nil, err
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

// argv splits --worker-command and checks it as the leader will, so a
// typo such as {prot} is refused before anything is sent.
func (sf *submitFlags) argv() ([]string, error) {
	argv, err := splitCommand(sf.workerCommand)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--worker-command %q: %w", sf.workerCommand, err)}
	}
	if len(argv) == 0 {
		return nil, &usageError{fmt.Errorf("--worker-command %q: empty command", sf.workerCommand)}
	}
	var ve *validate.Error
	if err := validate.WorkerCommand(argv); errors.As(err, &ve) {
		return nil, &usageError{fmt.Errorf("--worker-command %q: %s", sf.workerCommand, ve.Reason)}
	} else if err != nil {
		return nil, err
	}
	return argv, nil
}

// fromFile builds the spec from the file -f names, then the flags given on
// top of it, and checks it as the leader will: a mistake is reported at its
// line of the file, or its flag, before anything is sent.
func (sf *submitFlags) fromFile(cmd *cobra.Command, args []string) (*nimbusv1.TopologySpec, string, error) {
	data, err := os.ReadFile(sf.file)
	if err != nil {
		return nil, "", &opError{op: "submit", err: fmt.Errorf("topology file: %w", err)}
	}
	fs, err := parseTopologyFile(sf.file, data)
	if err != nil {
		return nil, "", &usageError{err}
	}
	if err := sf.override(cmd, fs); err != nil {
		return nil, "", err
	}
	path := fs.artifact
	if len(args) == 1 {
		path = args[0]
	}
	if path == "" {
		return nil, "", &usageError{fmt.Errorf("submit -f %s: no artifact: give ARTIFACT, or artifact in the file", sf.file)}
	}
	if err := checkSpec(fs.spec, fs.origins); err != nil {
		return nil, "", err
	}
	return fs.spec, path, nil
}

// override applies the flags given to a file's spec, and fills in the
// defaults of what neither gave. The steps follow the spec's fields.
func (sf *submitFlags) override(cmd *cobra.Command, fs *fileSpec) error {
	changed := cmd.Flags().Changed
	spec, o := fs.spec, fs.origins

	if changed("name") {
		spec.Name = sf.name
		o.set("spec.name", "--name")
	}
	if spec.Name == "" {
		return &usageError{fmt.Errorf("%s: name: missing (or give --name)", sf.file)}
	}

	if err := sf.overrideConf(spec, o); err != nil {
		return err
	}
	if changed("workers") {
		n, err := int32Flag("workers", sf.workers, 1)
		if err != nil {
			return err
		}
		spec.NumWorkers = n
		o.set("spec.num_workers", fmt.Sprintf("--workers %d", n))
	}
	if spec.NumWorkers == 0 {
		spec.NumWorkers = 1 // as --workers
	}

	if err := sf.overrideParallelism(spec, o); err != nil {
		return err
	}

	if changed("worker-command") || len(spec.WorkerCommand) == 0 {
		argv, err := sf.argv()
		if err != nil {
			return err
		}
		spec.WorkerCommand = argv
		o.set("spec.worker_command", "--worker-command")
	}

	spec.Owner = sf.owner
	o.set("spec.owner", "--owner")
	spec.InitialStatus = nimbusv1.InitialStatus_INITIAL_STATUS_ACTIVE
	if sf.inactive {
		spec.InitialStatus = nimbusv1.InitialStatus_INITIAL_STATUS_INACTIVE
	}
	return nil
}

// overrideConf sets each --conf KEY=VALUE in the file's conf;
// topology.workers is the worker count, as in the file.
func (sf *submitFlags) overrideConf(spec *nimbusv1.TopologySpec, o origins) error {
	conf, err := parseConf("conf", sf.conf)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		given := fmt.Sprintf("--conf %q", k+"="+conf[k])
		if k == confWorkers {
			n, err := strconv.ParseInt(conf[k], 10, 32)
			if err != nil || n < 1 {
				return &usageError{fmt.Errorf("%s: want a whole number from 1 to %d", given, math.MaxInt32)}
			}
			spec.NumWorkers = int32(n)
			o.set("spec.num_workers", given)
			continue
		}
		if spec.Config == nil {
			spec.Config = map[string]string{}
		}
		spec.Config[k] = conf[k]
		o.set("spec.config["+strconv.Quote(k)+"]", given)
	}
	return nil
}

// overrideParallelism sets each --component ID=N on the file's component
// ID; naming one the file lacks is refused, as a typo would be.
func (sf *submitFlags) overrideParallelism(spec *nimbusv1.TopologySpec, o origins) error {
	counts, err := parseComponents("component", sf.components)
	if err != nil {
		return err
	}
	for _, cc := range counts {
		i := slices.IndexFunc(spec.Components, func(c *nimbusv1.ComponentSpec) bool { return c.GetId() == cc.id })
		given := fmt.Sprintf("--component %q", fmt.Sprintf("%s=%d", cc.id, cc.n))
		if i < 0 {
			ids := make([]string, len(spec.Components))
			for j, c := range spec.Components {
				ids[j] = c.GetId()
			}
			return &usageError{fmt.Errorf("%s: %s has no component %q (it has %s)", given, sf.file, cc.id, strings.Join(ids, ", "))}
		}
		spec.Components[i].Parallelism = cc.n
		o.set(fmt.Sprintf("spec.components[%d].parallelism", i), given)
	}
	return nil
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
