package testcluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DaemonOption adjusts one nimbus or supervisor that a Cluster starts.
type DaemonOption func(*daemonConfig)

type daemonConfig struct {
	name     string
	port     int
	slots    []int
	localDir string
	args     []string
	env      []string
	bin      *Binaries // nil: the Cluster's
}

// WithName names the daemon in progress lines and names its log file
// (<name>.log) and default local dir; the default numbers it: nimbus-1,
// supervisor-2...
func WithName(name string) DaemonOption { return func(c *daemonConfig) { c.name = name } }

// WithPort sets a nimbus's gRPC port; the default, 0, lets it pick a free
// one, which its ready line gives (Process.Addr).
func WithPort(port int) DaemonOption { return func(c *daemonConfig) { c.port = port } }

// WithSlots sets a supervisor's worker slot ports; the default is two free
// ones (FreePorts).
func WithSlots(ports ...int) DaemonOption {
	return func(c *daemonConfig) { c.slots = append([]int(nil), ports...) }
}

// WithLocalDir sets storm.local.dir: a daemon restarted as itself is given
// its Process.LocalDir. The default is a new directory in the Cluster's Dir.
func WithLocalDir(dir string) DaemonOption { return func(c *daemonConfig) { c.localDir = dir } }

// WithArgs adds command-line flags after the Cluster's; a later flag wins.
// Several WithArgs add up.
func WithArgs(args ...string) DaemonOption {
	return func(c *daemonConfig) { c.args = append(c.args, args...) }
}

// WithBinariesOf runs the daemon from b instead of the Cluster's binaries:
// another release's (BuildAt), for a cluster that mixes releases.
func WithBinariesOf(b Binaries) DaemonOption { return func(c *daemonConfig) { c.bin = &b } }

// WithEnv adds environment variables (KEY=value) to the test's. Several
// WithEnv add up.
func WithEnv(env ...string) DaemonOption {
	return func(c *daemonConfig) { c.env = append(c.env, env...) }
}

// config applies opts to the defaults of a daemon of kind ("nimbus" or
// "supervisor") and names it.
func (c *Cluster) config(kind string, opts []DaemonOption) daemonConfig {
	var cfg daemonConfig
	for _, o := range opts {
		o(&cfg)
	}
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	if cfg.name == "" {
		cfg.name = kind + "-" + strconv.Itoa(seq)
	}
	if cfg.localDir == "" {
		cfg.localDir = filepath.Join(c.Dir, cfg.name)
	}
	return cfg
}

// common are the flags of every daemon.
func (c *Cluster) common(local string) []string {
	return []string{
		"--storm.zookeeper.servers", c.ZooKeeper,
		"--storm.zookeeper.root", c.Root,
		"--storm.zookeeper.session.timeout", c.SessionTimeout.String(),
		"--storm.local.dir", local,
		"--log.format", "json",
	}
}

// StartNimbus starts a nimbus on 127.0.0.1 (metrics and UI on free ports) and
// blocks until its ready line, for up to 30 s. It returns an error if the
// process cannot start, exits first or is not ready in time; the process
// is stopped at Close either way. It may be called from any goroutine.
func (c *Cluster) StartNimbus(opts ...DaemonOption) (*Process, error) {
	cfg := c.config("nimbus", opts)
	if cfg.slots != nil {
		return nil, errors.New("testcluster: WithSlots is for supervisors")
	}
	args := append(c.common(cfg.localDir),
		"--nimbus.host", "127.0.0.1",
		"--nimbus.grpc.port", strconv.Itoa(cfg.port),
		"--nimbus.metrics.port", "0",
		"--ui.port", "0",
	)
	return c.launch(cfg, "nimbus", args)
}

// StartSupervisor starts a supervisor on 127.0.0.1 that heartbeats every
// second (metrics on a free port), and blocks until its ready line, as
// StartNimbus does.
func (c *Cluster) StartSupervisor(opts ...DaemonOption) (*Process, error) {
	cfg := c.config("supervisor", opts)
	if cfg.port != 0 {
		return nil, errors.New("testcluster: WithPort is for nimbuses; a supervisor has WithSlots")
	}
	if cfg.slots == nil {
		var err error
		if cfg.slots, err = freePorts(2); err != nil {
			return nil, err
		}
	}
	slots := make([]string, len(cfg.slots))
	for i, p := range cfg.slots {
		slots[i] = strconv.Itoa(p)
	}
	args := append(c.common(cfg.localDir),
		"--storm.local.hostname", "127.0.0.1",
		"--supervisor.slots.ports", strings.Join(slots, ","),
		"--supervisor.heartbeat.frequency.secs", "1",
		"--supervisor.metrics.port", "0",
		"--supervisor.grpc.port", "0",
	)
	if cfg.bin == nil { // another release's supervisor may have no logviewer
		args = append(args, "--logviewer.port", "0")
	}
	return c.launch(cfg, "supervisor", args)
}

// launch starts a daemon binary with args, the Cluster's security flags
// (if any) and the daemon's own (cfg.args), records it, waits for its
// ready line and reports it: a nimbus by its address, a supervisor by its
// id.
func (c *Cluster) launch(cfg daemonConfig, binary string, args []string) (*Process, error) {
	env := cfg.env
	var id Identity
	if sec := c.Security; sec != nil {
		principal := NimbusPrincipal
		if binary == "supervisor" {
			principal = SupervisorPrincipal
		}
		var err error
		if id, err = sec.daemon(filepath.Join(c.Dir, "tls", cfg.name), principal); err != nil {
			return nil, fmt.Errorf("testcluster: the certificate of %s: %w", cfg.name, err)
		}
		secArgs, secEnv := sec.secureArgs(binary, id)
		args = append(args, secArgs...)
		env = append(secEnv, env...)
	}
	bin := c.Bin
	if cfg.bin != nil {
		bin = *cfg.bin
	}
	p, err := startProcess(cfg.name, bin.Path(binary), filepath.Join(c.Dir, cfg.name+".log"), append(args, cfg.args...), env)
	if err != nil {
		return nil, err
	}
	p.LocalDir = cfg.localDir
	p.Identity = id
	p.supervisor = binary == "supervisor"
	if c.Security != nil {
		p.metricsTLS = c.Security.MetricsTLS()
	}
	c.mu.Lock()
	c.started = append(c.started, p)
	c.mu.Unlock()
	if err := p.WaitReady(readyTimeout); err != nil {
		return nil, err
	}
	if id := p.ID(); id != "" {
		c.logf("%s ready as %s (pid %d)", p.Name, id, p.Pid())
	} else {
		c.logf("%s ready at %s (pid %d)", p.Name, p.Addr(), p.Pid())
	}
	return p, nil
}

// StartNimbuses starts n nimbuses with the same opts, one after the other,
// and fails the test if one does not start. It must be called from the
// test's goroutine.
func (c *Cluster) StartNimbuses(t testing.TB, n int, opts ...DaemonOption) []*Process {
	t.Helper()
	return c.startN(t, n, c.StartNimbus, opts)
}

// StartSupervisors starts n supervisors as StartNimbuses starts nimbuses.
func (c *Cluster) StartSupervisors(t testing.TB, n int, opts ...DaemonOption) []*Process {
	t.Helper()
	return c.startN(t, n, c.StartSupervisor, opts)
}

func (c *Cluster) startN(t testing.TB, n int, start func(...DaemonOption) (*Process, error), opts []DaemonOption) []*Process {
	t.Helper()
	ps := make([]*Process, 0, n)
	for range n {
		p, err := start(opts...)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}
