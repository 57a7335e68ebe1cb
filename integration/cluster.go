package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Binaries are the daemons a test run builds once.
type Binaries struct{ Dir string }

// Build compiles the daemons into dir; tests build with the race detector
// so that the processes under test are checked too, benchmarks without.
func Build(dir string, race bool) (Binaries, error) {
	args := []string{"build", "-o", dir + "/"}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/...", "./examples/...")...)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("build: %v\n%s", err, out)
	}
	return Binaries{Dir: dir}, nil
}

func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

// Path is the path of one binary.
func (b Binaries) Path(name string) string { return filepath.Join(b.Dir, name) }

// Cluster is a set of nimbus processes sharing one ZooKeeper.
type Cluster struct {
	Bin            Binaries
	ZooKeeper      string // connect string
	Root           string // storm.zookeeper.root
	SessionTimeout time.Duration
	Dir            string // logs and local dirs
	// Logf reports progress (t.Logf).
	Logf func(format string, args ...any)

	mu      sync.Mutex
	started []*Process
	conns   map[string]*grpc.ClientConn
	seq     int
}

// NimbusOptions adjust one nimbus.
type NimbusOptions struct {
	Name     string   // "" numbers it: nimbus-1, nimbus-2, ...
	Port     int      // 0 picks a free port
	LocalDir string   // storm.local.dir; "" makes a new one
	Args     []string // extra flags
	Env      []string
}

// StartNimbus starts a nimbus and waits for its ready line.
func (c *Cluster) StartNimbus(opts NimbusOptions) (*Process, error) {
	c.mu.Lock()
	c.seq++
	name := "nimbus-" + strconv.Itoa(c.seq)
	c.mu.Unlock()
	if opts.Name != "" {
		name = opts.Name
	}
	local := opts.LocalDir
	if local == "" {
		local = filepath.Join(c.Dir, name)
	}
	args := append([]string{
		"--storm.zookeeper.servers", c.ZooKeeper,
		"--storm.zookeeper.root", c.Root,
		"--storm.zookeeper.session.timeout", c.SessionTimeout.String(),
		"--nimbus.host", "127.0.0.1",
		"--nimbus.grpc.port", strconv.Itoa(opts.Port),
		"--nimbus.metrics.port", "0",
		"--storm.local.dir", local,
		"--log.format", "json",
	}, opts.Args...)
	p, err := c.launch(name, "nimbus", local, args, opts.Env)
	if err != nil {
		return nil, err
	}
	c.Logf("%s ready at %s (pid %d)", name, p.Addr(), p.Pid())
	return p, nil
}

// launch starts a daemon binary, records it, and waits for its ready line.
func (c *Cluster) launch(name, binary, local string, args, env []string) (*Process, error) {
	p, err := startProcess(name, c.Bin.Path(binary), filepath.Join(c.Dir, name+".log"), args, env)
	if err != nil {
		return nil, err
	}
	p.LocalDir = local
	c.mu.Lock()
	c.started = append(c.started, p)
	c.mu.Unlock()
	if err := p.WaitReady(30 * time.Second); err != nil {
		return nil, err
	}
	return p, nil
}

// SupervisorOptions adjust one supervisor.
type SupervisorOptions struct {
	Ports    []int  // slot ports; two free ones when empty
	LocalDir string // storm.local.dir; "" makes a new one
	Args     []string
	Env      []string
}

// StartSupervisor starts a supervisor and waits for its ready line.
func (c *Cluster) StartSupervisor(opts SupervisorOptions) (*Process, error) {
	c.mu.Lock()
	c.seq++
	name := "supervisor-" + strconv.Itoa(c.seq)
	c.mu.Unlock()
	local := opts.LocalDir
	if local == "" {
		local = filepath.Join(c.Dir, name)
	}
	ports := opts.Ports
	if len(ports) == 0 {
		var err error
		if ports, err = freePorts(2); err != nil {
			return nil, err
		}
	}
	portList := make([]string, len(ports))
	for i, p := range ports {
		portList[i] = strconv.Itoa(p)
	}
	args := append([]string{
		"--storm.zookeeper.servers", c.ZooKeeper,
		"--storm.zookeeper.root", c.Root,
		"--storm.zookeeper.session.timeout", c.SessionTimeout.String(),
		"--storm.local.hostname", "127.0.0.1",
		"--supervisor.slots.ports", strings.Join(portList, ","),
		"--supervisor.heartbeat.frequency.secs", "1",
		"--supervisor.metrics.port", "0",
		"--storm.local.dir", local,
		"--log.format", "json",
	}, opts.Args...)
	p, err := c.launch(name, "supervisor", local, args, opts.Env)
	if err != nil {
		return nil, err
	}
	c.Logf("%s ready as %s (pid %d)", name, p.ID(), p.Pid())
	return p, nil
}

// freePorts finds n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	return ports, nil
}

// Live returns the processes still running.
func (c *Cluster) Live() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Process
	for _, p := range c.started {
		if p.Running() {
			out = append(out, p)
		}
	}
	return out
}

// Conn returns a cached gRPC connection to addr.
func (c *Cluster) Conn(addr string) *grpc.ClientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	if cc, ok := c.conns[addr]; ok {
		return cc
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err) // only for a malformed address: a bug in the test
	}
	c.conns[addr] = cc
	return cc
}

// API is the NimbusService of one process.
func (c *Cluster) API(p *Process) nimbusv1.NimbusServiceClient {
	return nimbusv1.NewNimbusServiceClient(c.Conn(p.Addr()))
}

// Health asks one process for the status of service.
func (c *Cluster) Health(p *Process, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(c.Conn(p.Addr())).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}

// AgreedLeader asks every process in ps for the leader and returns it
// when all agree and it is one of ps.
func (c *Cluster) AgreedLeader(ps []*Process) (*nimbusv1.NimbusSummary, *Process, error) {
	var first *nimbusv1.NimbusSummary
	for _, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := c.API(p).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		l := resp.GetLeader()
		if first == nil {
			first = l
			continue
		}
		if l.GetHost() != first.GetHost() || l.GetPort() != first.GetPort() || l.GetEpoch() != first.GetEpoch() {
			return nil, nil, fmt.Errorf("%s sees %s:%d epoch %d, others %s:%d epoch %d", p.Name,
				l.GetHost(), l.GetPort(), l.GetEpoch(), first.GetHost(), first.GetPort(), first.GetEpoch())
		}
	}
	if first == nil {
		return nil, nil, errors.New("no process to ask")
	}
	addr := first.GetHost() + ":" + strconv.Itoa(int(first.GetPort()))
	for _, p := range ps {
		if p.Addr() == addr {
			return first, p, nil
		}
	}
	return nil, nil, fmt.Errorf("leader %s is not among the live processes", addr)
}

// Close stops every process (SIGKILL after a grace period) and closes
// connections.
func (c *Cluster) Close() {
	for _, p := range c.Live() {
		_ = p.Stop(syscall.SIGTERM, 10*time.Second)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = nil
}

// Logs returns the tail of every process's log, for a failed test.
func (c *Cluster) Logs(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.started {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.Name, p.LogPath, p.Tail(n))
	}
	return b.String()
}
