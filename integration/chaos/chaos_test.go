package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

const (
	session = 4 * time.Second
	// longSession is nimbus-1's: Storm's default, which only deposition
	// (not the session's expiry) can beat when nimbus-1 leads and dies.
	longSession = 20 * time.Second
	minReplicas = 2
	slotsEach   = 3
	// healFor bounds how long the cluster may take, once the faults stop,
	// to hold every topology on enough nimbuses and run all its workers.
	healFor = 90 * time.Second
)

// exitAtOnce keeps the race detector from waiting a second before a
// supervisor exits (its atexit_sleep_ms), which no release build does:
// restarted (restart-supervisor), the supervisor must be back within
// its keepers' window, under a second with the run's session
// (docs/ARCHITECTURE.md section 17), or they stop its workers.
const exitAtOnce = "GORACE=atexit_sleep_ms=0"

// daemon is one nimbus or supervisor of the run, across its restarts.
type daemon struct {
	name    string
	cluster *testcluster.Cluster
	local   string
	port    int           // a nimbus's gRPC port
	session time.Duration // a nimbus's own session, if not the cluster's
	slots   []int         // a supervisor's worker ports
	opts    []testcluster.DaemonOption
	from    *testcluster.Binaries // the binaries it runs from; nil: the cluster's (this tree's)

	mu       sync.Mutex
	p        *testcluster.Process
	restarts int
}

func (d *daemon) proc() *testcluster.Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.p
}

// start starts the daemon, as itself: same local dir, same ports.
func (d *daemon) start(nimbusArgs []string) error {
	d.mu.Lock()
	name := d.name
	if d.restarts > 0 {
		name = fmt.Sprintf("%s.%d", d.name, d.restarts)
	}
	d.restarts++
	opts := slices.Clone(d.opts)
	if d.from != nil {
		opts = append(opts, testcluster.WithBinariesOf(*d.from))
	}
	d.mu.Unlock()
	var p *testcluster.Process
	var err error
	if d.slots == nil {
		if d.session != 0 { // the last flag wins over the cluster's
			nimbusArgs = append(slices.Clone(nimbusArgs), "--storm.zookeeper.session.timeout", d.session.String())
		}
		p, err = d.cluster.StartNimbus(append([]testcluster.DaemonOption{testcluster.WithName(name), testcluster.WithPort(d.port),
			testcluster.WithLocalDir(d.local), testcluster.WithArgs(nimbusArgs...)}, opts...)...)
	} else {
		p, err = d.cluster.StartSupervisor(append([]testcluster.DaemonOption{testcluster.WithName(name),
			testcluster.WithSlots(d.slots...), testcluster.WithLocalDir(d.local)}, opts...)...)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", d.name, err)
	}
	d.mu.Lock()
	d.p = p
	d.mu.Unlock()
	return nil
}

// run is one chaos run: the cluster, what the client was told, and what
// the faults and the checker saw.
type run struct {
	t          *testing.T
	rng        *rand.Rand // the faults'; the seed makes them replayable
	dir        string
	ens        *testcluster.Ensemble
	set        settings
	proxies    []*testcluster.Proxy // between nimbuses[2] and ZooKeeper, one per server
	supProxies []*testcluster.Proxy // between sups[2] and ZooKeeper, one per server
	peers      *testcluster.PeerNet // between nimbuses; nil where it cannot run
	firewall   bool                 // testcluster.RejectPort can run here
	nimbuses   []*daemon
	sups       []*daemon
	nimbusArgs []string
	conn       *zk.Conn                       // the checker's own session
	client     *client.Client                 // the workload's: the SDK, as users call
	apis       []nimbusv1.NimbusServiceClient // nimbuses[i]'s, direct: the probes'
	artifact   []byte

	mu             sync.Mutex
	acked          map[string]string // acknowledged, no kill asked: id -> name
	killAsked      map[string]bool
	lostByFault    map[string]bool // acknowledged, but no copy left anywhere by a wipe of every nimbus (wipeAllCode)
	names          map[string]bool // every name submitted, acknowledged or not
	submitted      int
	ops            map[string]int // client calls that succeeded, by kind
	opErrors       map[string]int // client calls that failed, by kind
	refused        map[string]int // writes refused for the topology's status (FAILED_PRECONDITION): an answer, not a failure
	failures       []string       // the first maxFailures failed calls, with their errors
	sdk            *sdkCounts     // the workload's and the reader's SDK: retries and redirects
	faults         map[string]int
	recoveries     []time.Duration      // from losing the leader to a leader's write
	healed         []time.Duration      // from a fault's end to a leader's write
	codeRecoveries []time.Duration      // from wiping every nimbus's code to its return
	handOvers      map[string]int       // hand-over faults by outcome
	leaderless     []time.Duration      // hand-overs done: their leaderless_ms
	resetChanges   []int                // leader changes under each reset of the leader's connections
	started        time.Time            // the faults'
	samples        [2]map[string]sample // the daemons, before the faults and after the heal
	staleSent      int                  // writes sent to deposed leaders
	staleRejected  int                  // of those, rejected: all, or it is a violation
	staleFenced    int                  // of those, rejected by fencing
	canaryInactive bool
	stamps         map[string]stamp // epoch-stamped writes seen, by path@mzxid
	reported       map[string]bool  // violations already reported, by key
	goroutines     map[*testcluster.Process]*goroutineCount
	violations     []string

	hist           *history     // every client operation, for Porcupine
	blobs          *blobHistory // the blob workload's operations, checked apart
	checked        int          // operations checked, of which
	checkedUnknown int          // of unknown outcome
	checkResult    porcupine.CheckResult
	strictResult   porcupine.CheckResult // with linearizable reads: information
	checkTook      time.Duration
}

func (r *run) violation(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.violations = append(r.violations, msg)
	r.mu.Unlock()
	r.t.Errorf("VIOLATION: %s", msg)
}

func (r *run) count(m map[string]int, kind string) {
	r.mu.Lock()
	m[kind]++
	r.mu.Unlock()
}

func TestChaos(t *testing.T) {
	set, err := readSettings()
	if err != nil {
		t.Fatal(err)
	}
	seed := set.seed
	t.Logf("chaos: seed %d, %s (replay: CHAOS_SEED=%d)", seed, set, seed)
	defer func() {
		if t.Failed() {
			t.Logf("chaos: FAILED with seed %d (replay: CHAOS_SEED=%d %s)", seed, seed, set.env())
		}
	}()

	r := newRun(t, set)
	faults, err := r.faultKinds()
	if err != nil {
		t.Fatal(err)
	}
	r.canary()
	r.samples[0] = r.sample()
	var ctx context.Context
	var stop context.CancelFunc
	if set.faults > 0 { // until inject has injected that many
		ctx, stop = context.WithCancel(t.Context())
	} else {
		ctx, stop = context.WithTimeout(t.Context(), set.duration)
	}
	defer stop()
	r.started = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { r.workload(ctx, rand.New(rand.NewPCG(seed, 1))) })
	wg.Go(func() { r.reader(ctx, rand.New(rand.NewPCG(seed, 2))) })
	wg.Go(func() { r.blobWorkload(ctx, rand.New(rand.NewPCG(seed, 3))) })
	wg.Go(func() { r.checkEvery(ctx, time.Second) })
	r.inject(ctx, stop, faults)
	wg.Wait()
	took := time.Since(r.started)

	r.heal()
	r.finalCheck()
	r.checkHistory()
	r.checkBlobHistory()
	r.samples[1] = r.sample()
	r.report(seed, took)
	r.writeSummary(took)
}

// newRun starts the ensemble, the nimbuses (the first with a long
// session, the third through proxies it can cut) and the supervisors (the
// third through proxies of its own).
func newRun(t *testing.T, set settings) *run {
	r := newRunState(t, set, runDir(t, "CHAOS_DIR", "chaos-"))
	if set.wipeAll {
		// A topology a wipe of every nimbus leaves with no copy at all
		// blocks leadership until it is marked LOST: after 15 s, not 5 min.
		r.nimbusArgs = append(r.nimbusArgs, "--nimbus.code.lost.grace.secs", "15")
	}
	r.ens = testcluster.StartEnsemble(t, 3)
	proxied := func() ([]*testcluster.Proxy, string) {
		var ps []*testcluster.Proxy
		var addrs []string
		for _, addr := range r.ens.Addrs() {
			p := testcluster.StartProxy(t, addr)
			ps = append(ps, p)
			addrs = append(addrs, p.Addr())
		}
		return ps, strings.Join(addrs, ",")
	}
	var nimbusZK, supZK string
	r.proxies, nimbusZK = proxied()
	r.supProxies, supZK = proxied()
	if err := testcluster.PeerNetAvailable(); err != nil {
		t.Logf("chaos: no %s faults: %v", cutPeersName, err)
	} else {
		r.peers = testcluster.NewPeerNet(t, 3)
	}
	if err := testcluster.RejectPortAvailable(); err != nil {
		t.Logf("chaos: no %s faults: %v", resetLeaderName, err)
	} else {
		r.firewall = true
	}
	cluster := func(sub, zkConnect string) *testcluster.Cluster {
		opts := []testcluster.ClusterOption{testcluster.WithSessionTimeout(session), testcluster.WithDir(filepath.Join(r.dir, sub))}
		if r.peers != nil {
			opts = append(opts, testcluster.WithBinaries(r.peers.Binaries()))
		}
		return testcluster.New(t, zkConnect, opts...)
	}
	direct := cluster("direct", r.ens.ConnectString())
	cuttable := cluster("proxied", nimbusZK)
	cuttableSup := cluster("proxied-supervisor", supZK)
	r.addDaemons(func(kind string, i int) *testcluster.Cluster {
		switch {
		case i < 2:
			return direct
		case kind == "nimbus":
			return cuttable
		}
		return cuttableSup
	})
	r.nimbuses[0].session = longSession
	if r.peers != nil {
		for i, d := range r.nimbuses {
			d.opts = []testcluster.DaemonOption{testcluster.WithArgs("--nimbus.host", r.peers.Name(i)), testcluster.WithEnv(r.peers.Env(i))}
		}
		for _, d := range r.sups {
			d.opts = append(d.opts, testcluster.WithEnv(r.peers.Env(-1)))
		}
	}
	r.startDaemons()
	var sdk []client.Option
	if r.peers != nil { // the leader's address it is sent to is a name only the daemons know
		sdk = append(sdk, client.WithDialOptions(grpc.WithContextDialer(r.peers.Dial)))
	}
	r.dial(sdk...)
	return r
}

// runDir is a run's directory: the test's own temporary one, or, with env
// (CHAOS_DIR, ROLL_DIR) set, a new one named prefix* in that directory,
// kept after the test.
func runDir(t *testing.T, env, prefix string) string {
	keep := os.Getenv(env)
	if keep == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(keep, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos: logs and local dirs kept in %s", dir)
	return dir
}

// newRunState is a run that has started nothing, with the nimbuses' flags
// every run gives them.
func newRunState(t *testing.T, set settings, dir string) *run {
	return &run{
		t: t, set: set, rng: rand.New(rand.NewPCG(set.seed, 0)), dir: dir, hist: newHistory(), blobs: new(blobHistory), sdk: new(sdkCounts),
		acked: map[string]string{}, killAsked: map[string]bool{}, lostByFault: map[string]bool{}, names: map[string]bool{},
		ops: map[string]int{}, opErrors: map[string]int{}, refused: map[string]int{}, faults: map[string]int{}, handOvers: map[string]int{},
		stamps: map[string]stamp{}, reported: map[string]bool{}, goroutines: map[*testcluster.Process]*goroutineCount{},
		nimbusArgs: []string{
			"--topology.min.replication.count", strconv.Itoa(minReplicas),
			"--topology.max.replication.wait.time.sec", "20",
			"--nimbus.code.sync.freq.secs", "3",
			"--nimbus.monitor.freq.secs", "1",
			"--nimbus.supervisor.timeout.secs", "8",
			"--topology.message.timeout.secs", "1",
		},
	}
}

// addDaemons makes the run's 3 nimbuses and 3 supervisors (slotsEach
// slots each) on free ports, each in its own local dir, the i-th of each
// kind on clusterOf(kind, i); it starts none.
func (r *run) addDaemons(clusterOf func(kind string, i int) *testcluster.Cluster) {
	ports := testcluster.FreePorts(r.t, 3+3*slotsEach)
	for i := range 3 {
		name := fmt.Sprintf("nimbus-%d", i+1)
		r.nimbuses = append(r.nimbuses, &daemon{name: name, cluster: clusterOf("nimbus", i), local: filepath.Join(r.dir, name), port: ports[i]})
	}
	for i := range 3 {
		name := fmt.Sprintf("supervisor-%d", i+1)
		r.sups = append(r.sups, &daemon{name: name, cluster: clusterOf("supervisor", i), local: filepath.Join(r.dir, name),
			slots: ports[3+i*slotsEach : 3+(i+1)*slotsEach], opts: []testcluster.DaemonOption{testcluster.WithEnv(exitAtOnce)}})
	}
}

// startDaemons starts the nimbuses, at once, then the supervisors, one
// after the other; it fails the test if one does not start.
func (r *run) startDaemons() {
	var wg sync.WaitGroup
	for _, d := range r.nimbuses {
		wg.Go(func() {
			if err := d.start(r.nimbusArgs); err != nil {
				r.t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, d := range r.sups {
		if err := d.start(nil); err != nil {
			r.t.Fatal(err)
		}
	}
	if r.t.Failed() {
		r.t.FailNow()
	}
}

// dial opens the run's clients: the checker's ZooKeeper session, the
// workload's SDK client (with sdk, counting its retries and redirects)
// and a direct connection to each nimbus for the probes; and reads the
// example worker's artifact the workload submits.
func (r *run) dial(sdk ...client.Option) {
	t := r.t
	var seeds []string
	for _, d := range r.nimbuses {
		seeds = append(seeds, net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port)))
	}
	r.conn = testcluster.ConnectZooKeeper(t, 10*time.Second, r.ens.Addrs()...)
	var err error
	if r.client, err = client.New(seeds, append(sdk, client.WithLogger(slog.New(r.sdk)))...); err != nil {
		t.Fatal(err)
	}
	for _, addr := range seeds {
		// Reconnect within 250 ms, not gRPC's default of up to 2 minutes:
		// the probes time recovery, and nimbuses come back on these ports.
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: time.Second,
				Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 250 * time.Millisecond}}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		r.apis = append(r.apis, nimbusv1.NewNimbusServiceClient(cc))
	}
	t.Cleanup(func() { r.client.Close() })
	if r.artifact, err = os.ReadFile(testcluster.Bin(t).Path("wordcount")); err != nil {
		t.Fatal(err)
	}
}

// restart starts d again after a crash, retrying while its port is still
// held by the dying process; an error fails the test, and is returned.
func (r *run) restart(d *daemon) error {
	err := testcluster.Poll(30*time.Second, func() error { return d.start(r.nimbusArgs) })
	if err != nil {
		r.t.Errorf("chaos: %v", err)
	}
	return err
}

// heal undoes whatever a fault left behind: every daemon runs, every
// ZooKeeper server serves, the proxies let traffic through.
func (r *run) heal() {
	restoreProxies(r.proxies)
	restoreProxies(r.supProxies)
	if r.peers != nil {
		r.peers.Restore()
	}
	r.ens.StartAll()
	for _, d := range append(append([]*daemon{}, r.nimbuses...), r.sups...) {
		p := d.proc()
		_ = p.Signal(syscall.SIGCONT)
		if !p.Running() {
			r.restart(d)
		}
	}
}
