package bench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var (
	wsSupervisors   = flag.Int("workerstats-supervisors", 1000, "simulated supervisors of BenchmarkWorkerStats")
	wsTopologies    = flag.Int("workerstats-topologies", 1000, "topologies of BenchmarkWorkerStats, one worker each")
	wsSteadySecs    = flag.Int("workerstats-steady-secs", 60, "seconds of each steady-state window")
	wsWindows       = flag.Int("workerstats-windows", 2, "steady-state windows per phase, each reported")
	wsRequests      = flag.Int("workerstats-requests", 500, "GET /api/v1/topology/:id requests a round, per nimbus and window parameter, one at a time")
	wsLatencyRounds = flag.Int("workerstats-latency-rounds", 3, "rounds of GET /api/v1/topology/:id requests, each reported")
	wsExtraStreams  = flag.Int("workerstats-extra-streams", 0, "streams added to every component of every simulated worker (0: the word count's shape, 2-3 streams a component)")
)

// BenchmarkWorkerStats measures what workers' metrics cost at scale: 3
// real nimbuses and a real ZooKeeper, -workerstats-topologies topologies
// of the word count's shape (a spout and two bolts) with one worker each,
// placed on -workerstats-supervisors simulated supervisors, and one real
// supervisor running the word count example (its real workers report
// through the worker protocol). It runs two phases on the same cluster:
// the simulated workers reporting no metrics, then reporting the word
// count's counters (rising every heartbeat). In each it reports: the
// heartbeat nodes' sizes and the ZooKeeper requests per heartbeat write
// (from the nodes' versions and ZooKeeper's own counts), every nimbus's
// CPU and ZooKeeper requests per second at steady state, and the latency
// of GET /api/v1/topology/:id, one request at a time, on the leader and
// a follower, for all time and ?window=600.
func BenchmarkWorkerStats(b *testing.B) {
	if *scalePprof != "" {
		profileDir = filepath.Join(*scalePprof, "workerstats")
	}
	ws := startWorkerStatsCluster(b)
	defer ws.sims.Close()
	for _, phase := range []struct {
		name    string
		metrics bool
	}{{"metrics off", false}, {"metrics on", true}} {
		if err := ws.phase(phase.name, phase.metrics); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Fprint(os.Stderr, ws.markdown())
}

// workerStatsCluster is the cluster BenchmarkWorkerStats measures, with
// its report so far.
type workerStatsCluster struct {
	z         *testcluster.ZooKeeper
	c         *testcluster.Cluster
	conn      *zk.Conn // the benchmark's own session, for reading nodes
	leader    *testcluster.Process
	followers []*testcluster.Process
	real      *testcluster.Process // the real supervisor
	realID    string
	sims      *simSupervisors
	placement map[int][]simSlot // simulated supervisor index -> its workers
	ids       []string          // the simulated topologies' ids
	shape     []simComponent
	began     time.Time // the simulated workers' runs started a day before
	rep       *scaleReport
	// The series the leader's aggregator refused past its bound, at the
	// last scrape: then a topology may be answered without some counts.
	refused int64
}

// simSlot is one worker a simulated supervisor runs.
type simSlot struct {
	topology string
	port     int32
}

// startWorkerStatsCluster starts the cluster, the real supervisor and
// its word count, submits the topologies and waits until the simulated
// supervisors have them all placed.
func startWorkerStatsCluster(b *testing.B) *workerStatsCluster {
	ws := &workerStatsCluster{shape: wordcountShape(*wsExtraStreams), began: time.Now().Add(-24 * time.Hour)}
	ws.z = testcluster.StartZooKeeper(b)
	ws.c = testcluster.New(b, ws.z.Addr(), testcluster.WithRoot(scaleRoot), testcluster.WithSessionTimeout(scaleSession),
		testcluster.WithLogf(discard))
	ws.c.StartNimbuses(b, 3, testcluster.WithArgs(append([]string{"--topology.min.replication.count", "1"}, pprofArgs()...)...))
	ws.leader, ws.followers = scaleLeader(b, ws.c)
	ws.conn = testcluster.ConnectZooKeeper(b, 10*time.Second, ws.z.Addr())
	ws.rep = &scaleReport{size: scaleSize{*wsSupervisors, *wsTopologies}, pids: scalePids(ws.z, ws.leader, ws.followers), nums: map[string]float64{}}
	cl, err := client.New(testcluster.Addrs(ws.c.Live()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := ws.startRealWordCount(b, cl); err != nil {
		b.Fatal(err)
	}
	if err := ws.submit(cl); err != nil {
		b.Fatal(err)
	}
	if err := ws.startSims(); err != nil {
		b.Fatal(err)
	}
	return ws
}

// startRealWordCount starts a real supervisor with two slots (heartbeat
// every 5 s, as Storm's default) and the word count example on both, and
// waits until its heartbeat carries both workers' metrics. With its slots
// full, no simulated topology is placed on it.
func (ws *workerStatsCluster) startRealWordCount(b *testing.B, cl *client.Client) error {
	sups := ws.c.StartSupervisors(b, 1, testcluster.WithArgs("--supervisor.heartbeat.frequency.secs", "5"))
	ws.real, ws.realID = sups[0], sups[0].ID()
	data, err := os.ReadFile(testcluster.Bin(b).Path("wordcount"))
	if err != nil {
		return err
	}
	spec := &nimbusv1.TopologySpec{
		Name: "wordcount", NumWorkers: 2,
		Components: []*nimbusv1.ComponentSpec{
			{Id: "sentence", Parallelism: 1, Kind: nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT},
			{Id: "split", Parallelism: 2, Kind: nimbusv1.ComponentKind_COMPONENT_KIND_BOLT},
			{Id: "count", Parallelism: 3, Kind: nimbusv1.ComponentKind_COMPONENT_KIND_BOLT},
		},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.SubmitTopology(ctx, spec, strings.NewReader(string(data)), int64(len(data)), nil); err != nil {
		return fmt.Errorf("submit the word count: %w", err)
	}
	return testcluster.Poll(2*time.Minute, func() error {
		data, _, err := ws.conn.Get(cluster.Paths{Root: scaleRoot}.Supervisor(ws.realID))
		if err != nil {
			return err
		}
		info := new(clusterv1.SupervisorInfo)
		if err := cluster.Decode("supervisor", data, info); err != nil {
			return err
		}
		reporting := 0
		for _, w := range info.GetWorkers() {
			if len(w.GetMetrics().GetStreams()) > 0 {
				reporting++
			}
		}
		if reporting < 2 {
			return fmt.Errorf("the real supervisor's heartbeat carries metrics of %d workers of 2", reporting)
		}
		return nil
	})
}

// submit submits the simulated topologies: the word count's components,
// one worker each, a worker command that the simulated supervisors never
// run.
func (ws *workerStatsCluster) submit(cl *client.Client) error {
	began := time.Now()
	err := submitSpecs(cl, *wsTopologies, func(i int) *nimbusv1.TopologySpec {
		spec := &nimbusv1.TopologySpec{Name: tinyName(i), NumWorkers: 1, WorkerCommand: []string{"/bin/true"}}
		for _, c := range ws.shape {
			kind := nimbusv1.ComponentKind_COMPONENT_KIND_BOLT
			if c.kind == "spout" {
				kind = nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT
			}
			spec.Components = append(spec.Components, &nimbusv1.ComponentSpec{Id: c.name, Parallelism: c.executors, Kind: kind})
		}
		return spec
	}, nil)
	if err != nil {
		return err
	}
	ws.rep.add("submit %d topologies of the word count's shape (8 at a time)", time.Since(began).Round(time.Millisecond), *wsTopologies)
	return testcluster.Poll(5*time.Minute, func() error {
		cs, err := ws.c.API(ws.leader).GetClusterInfo(context.Background(), &nimbusv1.GetClusterInfoRequest{})
		if err != nil {
			return err
		}
		if n := cs.GetCluster().GetEligibleStandbys(); n != 2 {
			return fmt.Errorf("%d eligible standbys", n)
		}
		return nil
	})
}

// startSims registers the simulated supervisors, waits until every
// topology is placed and learns which workers each simulated supervisor
// runs from the assignments.
func (ws *workerStatsCluster) startSims() error {
	sims, err := startSimSupervisors([]string{ws.z.Addr()}, scaleRoot, *wsSupervisors, 32, scaleHeartbeat, nil)
	if err != nil {
		return err
	}
	ws.sims = sims
	if err := testcluster.Poll(5*time.Minute, func() error {
		n, err := placed(ws.conn)
		if err != nil {
			return err
		}
		if n < *wsTopologies+1 {
			return fmt.Errorf("%d of %d topologies placed", n, *wsTopologies+1)
		}
		return nil
	}); err != nil {
		return err
	}
	return ws.readPlacement()
}

// readPlacement reads every assignment into ws.placement and ws.ids.
func (ws *workerStatsCluster) readPlacement() error {
	index := map[string]int{}
	for i, id := range ws.sims.ids {
		index[id] = i
	}
	dir := cluster.Paths{Root: scaleRoot}.Assignments()
	ids, _, err := ws.conn.Children(dir)
	if err != nil {
		return err
	}
	ws.placement = map[int][]simSlot{}
	perSupervisor := map[int]int{}
	for _, id := range ids {
		data, _, err := ws.conn.Get(dir + "/" + id)
		if err != nil {
			return err
		}
		a := new(clusterv1.Assignment)
		if err := cluster.Decode(dir, data, a); err != nil {
			return err
		}
		slots := map[simSlot]int{}
		for _, e := range a.GetExecutors() {
			if i, ok := index[e.GetSlot().GetSupervisorId()]; ok {
				slots[simSlot{id, e.GetSlot().GetPort()}] = i
			}
		}
		for slot, i := range slots {
			ws.placement[i] = append(ws.placement[i], slot)
			perSupervisor[i]++
		}
		if len(slots) > 0 {
			ws.ids = append(ws.ids, id)
		}
	}
	if len(ws.ids) != *wsTopologies {
		return fmt.Errorf("%d topologies placed on simulated supervisors, want %d", len(ws.ids), *wsTopologies)
	}
	hist := map[int]int{}
	for i := range *wsSupervisors {
		hist[perSupervisor[i]]++
	}
	var parts []string
	for _, n := range slices.Sorted(func(yield func(int) bool) {
		for n := range hist {
			if !yield(n) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%d with %d", hist[n], n))
	}
	ws.rep.add("simulated supervisors by the workers they run", strings.Join(parts, ", "))
	return nil
}

// phase has the simulated workers report metrics or not, waits until
// every heartbeat node and every nimbus shows it, and measures.
func (ws *workerStatsCluster) phase(name string, metrics bool) error {
	ws.sims.setWorkers(ws.workersOf(metrics))
	if err := ws.settle(metrics); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for w := range max(*wsWindows, 1) {
		if err := ws.steadyWindow(fmt.Sprintf("%s, window %d", name, w+1), name, w == 0); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	sizes, err := ws.readNodes()
	if err != nil {
		return err
	}
	ws.rep.add(name+": simulated heartbeat node, bytes: p50, p99, max", fmt.Sprintf("%d, %d, %d", intPercentile(sizes.sim, 50), intPercentile(sizes.sim, 99), slices.Max(sizes.sim)))
	ws.rep.add(name+": the real supervisor's heartbeat node (2 word count workers), bytes; its workers' restarts so far", fmt.Sprintf("%d; %d", sizes.real, sizes.realRestarts))
	if err := ws.scrape(name); err != nil {
		return err
	}
	for _, target := range []struct {
		role string
		p    *testcluster.Process
	}{{"leader", ws.leader}, {"follower", ws.followers[0]}} {
		for _, query := range []string{"", "?window=600"} {
			if err := ws.topologyLatency(name, target.role, target.p, query, metrics); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// settle waits until every simulated heartbeat node carries its workers
// (with metrics or without) and, with metrics, until every nimbus answers
// counts for a sample of topologies.
func (ws *workerStatsCluster) settle(metrics bool) error {
	if err := testcluster.Poll(time.Minute, func() error {
		nodes, err := ws.readNodes()
		if err != nil {
			return err
		}
		if nodes.workers != *wsTopologies || (metrics && nodes.reporting != *wsTopologies) || (!metrics && nodes.reporting != 0) {
			return fmt.Errorf("heartbeats carry %d workers, %d with metrics", nodes.workers, nodes.reporting)
		}
		return nil
	}); err != nil {
		return err
	}
	if !metrics {
		return nil
	}
	sample := []string{ws.ids[0], ws.ids[len(ws.ids)/2], ws.ids[len(ws.ids)-1]}
	return testcluster.Poll(time.Minute, func() error {
		for _, p := range ws.nimbuses() {
			for _, id := range sample {
				page, _, err := getTopology(http.DefaultClient, p.UIURL()+"/api/v1/topology/"+id)
				if err != nil {
					return err
				}
				if !page.StatsReported {
					return fmt.Errorf("%s has no counts of %s yet", p.Name, id)
				}
			}
		}
		return nil
	})
}

// steadyWindow measures one window of -workerstats-steady-secs: each
// nimbus's CPU and ZooKeeper requests, the heartbeat writes and the
// requests of the supervisors' sessions.
func (ws *workerStatsCluster) steadyWindow(label, phase string, profiled bool) error {
	nimbuses := ws.nimbuses()
	sids := map[*testcluster.Process]int64{}
	for _, p := range nimbuses {
		sid, err := sessionOf(ws.conn, p)
		if err != nil {
			return err
		}
		sids[p] = sid
	}
	_, realStat, err := ws.conn.Get(cluster.Paths{Root: scaleRoot}.Supervisor(ws.realID))
	if err != nil {
		return err
	}
	nodes0, err := ws.readNodes()
	if err != nil {
		return err
	}
	before, err := cons(ws.z.Addr())
	if err != nil {
		return err
	}
	beats0 := ws.sims.beats.Load()
	cpu0 := map[*testcluster.Process]time.Duration{}
	for _, p := range nimbuses {
		if cpu0[p], err = procCPU(p.Pid()); err != nil {
			return err
		}
	}
	meter := startCPUMeter(ws.rep.pids)
	window := time.Duration(*wsSteadySecs) * time.Second
	waitProfiles := func() {}
	if profiled {
		prefix := strings.ReplaceAll(phase, " ", "-")
		l, f := profile(ws.leader, window/2, prefix+"-leader"), profile(ws.followers[0], window/2, prefix+"-follower")
		waitProfiles = func() { l(); f() }
	}
	start := time.Now()
	<-time.After(window) // the measurement window, not a wait for a condition
	elapsed := time.Since(start)
	waitProfiles()
	cores := meter.String()
	beats := ws.sims.beats.Load() - beats0
	after, err := cons(ws.z.Addr())
	if err != nil {
		return err
	}
	for _, p := range nimbuses {
		cpu1, err := procCPU(p.Pid())
		if err != nil {
			return err
		}
		rss, err := rssMiB(p.Pid())
		if err != nil {
			return err
		}
		if _, ok := after[sids[p]]; !ok { // a count from a new session would mean nothing
			return fmt.Errorf("%s lost its ZooKeeper session in the window", p.Name)
		}
		reqs, _ := requests(before, after, map[int64]bool{sids[p]: true})
		ws.rep.add(fmt.Sprintf("%s: %s (%s): CPU, resident memory, ZooKeeper requests a second", label, p.Name, roleOf(p, ws.leader)),
			fmt.Sprintf("%.1f%% of one core, %d MiB, %.1f/s", 100*float64(cpu1-cpu0[p])/float64(elapsed), rss, float64(reqs)/elapsed.Seconds()))
	}
	ws.rep.add(label+": CPU, cores", cores)
	nodes1, err := ws.readNodes()
	if err != nil {
		return err
	}
	writes := nodes1.versions - nodes0.versions
	simReqs, _ := requests(before, after, ws.sims.sessions())
	ws.rep.add(label+": simulated supervisors: heartbeats, their sessions' ZooKeeper requests, requests per heartbeat; writes (node versions, read just outside the window)",
		fmt.Sprintf("%d, %d, %.3f; %d", beats, simReqs, per(simReqs, beats), writes))
	_, realStat1, err := ws.conn.Get(cluster.Paths{Root: scaleRoot}.Supervisor(ws.realID))
	if err != nil {
		return err
	}
	realWrites := int64(realStat1.Version - realStat.Version)
	realReqs, _ := requests(before, after, map[int64]bool{realStat.EphemeralOwner: true})
	ws.rep.add(label+": the real supervisor (word count, metrics from its workers): heartbeat writes, its session's ZooKeeper requests, requests per write",
		fmt.Sprintf("%d, %d, %.3f", realWrites, realReqs, per(realReqs, realWrites)))
	return nil
}

// nimbuses are the leader, then the followers.
func (ws *workerStatsCluster) nimbuses() []*testcluster.Process {
	return append([]*testcluster.Process{ws.leader}, ws.followers...)
}

func roleOf(p, leader *testcluster.Process) string {
	if p == leader {
		return "leader"
	}
	return "follower"
}

// heartbeatNodes is what the supervisors' nodes held at one reading.
type heartbeatNodes struct {
	sim  []int // each simulated node's size in bytes
	real int   // the real supervisor's node's size
	// The restarts its workers' states count.
	realRestarts int32
	versions     int64 // the simulated nodes' versions, summed: their writes so far
	workers      int   // simulated workers the nodes carry
	reporting    int   // of them, those with metrics
}

// readNodes reads every supervisor's heartbeat node, 32 at a time.
func (ws *workerStatsCluster) readNodes() (heartbeatNodes, error) {
	paths := cluster.Paths{Root: scaleRoot}
	var (
		out      = heartbeatNodes{sim: make([]int, len(ws.sims.ids))}
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(ws.sims.ids); i = int(next.Add(1) - 1) {
				data, stat, err := ws.conn.Get(paths.Supervisor(ws.sims.ids[i]))
				info := new(clusterv1.SupervisorInfo)
				if err == nil {
					err = cluster.Decode("supervisor", data, info)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					out.sim[i] = len(data)
					out.versions += int64(stat.Version)
					for _, w := range info.GetWorkers() {
						out.workers++
						if w.GetMetrics() != nil {
							out.reporting++
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return out, firstErr
	}
	data, _, err := ws.conn.Get(paths.Supervisor(ws.realID))
	if err != nil {
		return out, err
	}
	out.real = len(data)
	info := new(clusterv1.SupervisorInfo)
	if err := cluster.Decode("supervisor", data, info); err != nil {
		return out, err
	}
	for _, w := range info.GetWorkers() {
		out.realRestarts += w.GetRestarts()
	}
	return out, nil
}

func (ws *workerStatsCluster) markdown() string {
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d simulated supervisors, %d topologies of the word count's shape (%d streams a worker), 3 nimbuses, 1 real supervisor with the word count; %d cores (%s), %s\n\n| what | value |\n|---|---|\n",
		*wsSupervisors, *wsTopologies, simStreamCount(ws.shape), runtime.NumCPU(), cpuModel(), runtime.Version())
	for _, row := range ws.rep.rows {
		fmt.Fprintf(&out, "| %s | %s |\n", row[0], row[1])
	}
	return out.String()
}

func intPercentile(xs []int, p int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}
