package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var (
	scaleSupervisors = flag.Int("scale-supervisors", 1000, "simulated supervisors (without -scale-sizes)")
	scaleTopologies  = flag.Int("scale-topologies", 1000, "topologies submitted (without -scale-sizes)")
	scaleSizes       = flag.String("scale-sizes", "", "sizes to run one after the other, N supervisors and N topologies each (e.g. 1000,2000,5000)")
	scaleResults     = flag.String("scale-results", "", "markdown file whose scale section the run writes: a table per size and how costs grow between sizes (a relative path is from the repository root)")
	scaleReadSecs    = flag.Int("scale-read-secs", 10, "seconds of each read-path load")
	scaleReadRounds  = flag.Int("scale-read-rounds", 3, "rounds of every read-path row; a row reports its median round (profiles are of the last)")
	scaleSteadySecs  = flag.Int("scale-steady-secs", 60, "seconds of the steady-state window")
	scaleClients     = flag.Int("scale-clients", 32, "concurrent callers in the read-path load")
	scaleRows        = flag.String("scale-rows", "", "regular expression: run only the read-path rows whose \"rpc nimbus\" matches (empty: all)")
)

const (
	scaleRoot      = "/storm"
	scaleSession   = 6 * time.Second // the nimbuses'
	scaleHeartbeat = 5 * time.Second // the simulated supervisors'
)

// BenchmarkScale runs 3 real nimbuses against a real ZooKeeper with
// -scale-topologies small topologies and -scale-supervisors simulated
// supervisors heartbeating every 5 s, and measures: how long the leader
// takes to place every topology when the supervisors appear; the leader's
// CPU and memory and the ZooKeeper requests per heartbeat at steady state;
// GetLeader and GetClusterInfo throughput, latency and ZooKeeper reads on
// the leader and on a follower; and failover (the lock won to the first
// schedule done). It prints a markdown table. With -scale-sizes it does so
// for each size, on a cluster of its own, and then how each cost grew from
// size to size (scalecurve_test.go); -scale-results writes all of it into
// a file.
func BenchmarkScale(b *testing.B) {
	sizes, err := parseSizes(*scaleSizes, *scaleSupervisors, *scaleTopologies)
	if err != nil {
		b.Fatal(err)
	}
	results, err := resultsPath(*scaleResults)
	if err != nil { // now, not after half an hour of measuring
		b.Fatal(err)
	}
	var reports []*scaleReport
	for _, sz := range sizes {
		b.Run(fmt.Sprintf("%dx%d", sz.supervisors, sz.topologies), func(b *testing.B) {
			reports = append(reports, runScale(b, sz))
		})
	}
	if err := writeCurve(results, reports); err != nil {
		fmt.Fprint(os.Stderr, curveMarkdown(reports)) // the run is not lost
		b.Fatal(err)
	}
}

// resultsPath is -scale-results as a path from here: go test runs in the
// package's directory, one below the repository root that a relative path
// is written from. Its directory must exist.
func resultsPath(flagValue string) (string, error) {
	if flagValue == "" {
		return "", nil
	}
	path := flagValue
	if !filepath.IsAbs(path) {
		path = filepath.Join("..", path)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return "", fmt.Errorf("-scale-results %s: no directory %s", flagValue, filepath.Dir(path))
	}
	return path, nil
}

// runScale measures one size on a cluster of its own.
func runScale(b *testing.B, sz scaleSize) *scaleReport {
	profileDir = filepath.Join(*scalePprof, fmt.Sprintf("%dx%d", sz.supervisors, sz.topologies))
	z := testcluster.StartZooKeeper(b)
	c := testcluster.New(b, z.Addr(), testcluster.WithRoot(scaleRoot), testcluster.WithSessionTimeout(scaleSession),
		testcluster.WithLogf(discard))
	c.StartNimbuses(b, 3, testcluster.WithArgs(append([]string{"--topology.min.replication.count", "1"}, pprofArgs()...)...))
	leader, followers := scaleLeader(b, c)
	conn := testcluster.ConnectZooKeeper(b, 10*time.Second, z.Addr())
	rep := &scaleReport{size: sz, pids: scalePids(z, leader, followers), nums: map[string]float64{}}

	// Topologies first, with no supervisor: every assignment stays empty
	// until the supervisors come, so placing them all is one full schedule.
	cl, err := client.New(testcluster.Addrs(c.Live()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	began := time.Now()
	submitCPU := startCPUMeter(rep.pids)
	profiled := func() {}
	if err := submitTiny(cl, sz.topologies, func(done int) {
		if done == sz.topologies/2 { // the second half, the larger cluster
			profiled = profile(leader, 20*time.Second, "submit-leader")
		}
	}); err != nil {
		b.Fatal(err)
	}
	submitted := time.Since(began)
	rep.add("submit %d topologies (8 at a time, min replication 1)", submitted.Round(time.Millisecond), sz.topologies)
	rep.nums[costSubmit] = ms(submitted) / float64(sz.topologies)
	rep.add("CPU while submitting, cores", submitCPU)
	profiled()
	if err := testcluster.Poll(5*time.Minute, func() error {
		cs, err := c.API(leader).GetClusterInfo(context.Background(), &nimbusv1.GetClusterInfoRequest{})
		if err != nil {
			return err
		}
		if n := cs.GetCluster().GetEligibleStandbys(); n != 2 {
			return fmt.Errorf("%d eligible standbys", n)
		}
		return nil
	}); err != nil {
		b.Fatalf("followers syncing the code: %v", err)
	}

	began = time.Now()
	sims, err := startSimSupervisors([]string{z.Addr()}, scaleRoot, sz.supervisors, 32, scaleHeartbeat, func(n int) {
		if n%250 == 0 {
			fmt.Fprintf(os.Stderr, "scale: %d supervisors registered\n", n)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sims.Close()
	registered := time.Now()
	rep.add("register %d simulated supervisors (32 at a time)", registered.Sub(began).Round(time.Millisecond), sz.supervisors)
	if err := testcluster.Poll(5*time.Minute, func() error {
		n, err := placed(conn)
		if err != nil {
			return err
		}
		if n < sz.topologies {
			return fmt.Errorf("%d of %d topologies placed", n, sz.topologies)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	placedIn := time.Since(registered)
	rep.add("every topology placed, from the last supervisor registered (polled)", placedIn.Round(time.Millisecond))
	rep.nums[costPlaceAll] = ms(placedIn)
	if longest, n, err := longestRound(leader.LogPath); err == nil {
		rep.add("the leader's longest scheduling round (its log)", fmt.Sprintf("%d ms, writing %d assignments", longest, n))
		rep.nums[costLongestPerWrite] = float64(longest) / float64(n)
	}
	if sum, count, err := histogram(leader, "nimbus_schedule_duration_seconds"); err == nil {
		rep.add("leader's scheduling rounds so far: count, mean, largest bucket used", fmt.Sprintf("%d, %.1f ms, %s", count, 1000*sum/float64(count), maxBucket(leader, "nimbus_schedule_duration_seconds")))
		rep.nums[costRoundMean] = 1000 * sum / float64(count)
	}

	// Steady state.
	if err := steadyState(rep, z.Addr(), conn, leader, followers, sims); err != nil {
		b.Fatal(err)
	}

	// The read path, row after row, in rounds: a row's cost is its median
	// round (medianRounds), so a spell of a slower machine (the callers'
	// CPU per call moves with the nimbus's) does not decide it.
	for range max(*scaleReadRounds, 1) {
		for _, target := range []struct {
			name string
			p    *testcluster.Process
		}{{"leader", leader}, {"follower", followers[0]}} {
			for _, rpc := range []struct {
				name string
				call func(context.Context, nimbusv1.NimbusServiceClient) error
			}{
				{"GetLeader", func(ctx context.Context, api nimbusv1.NimbusServiceClient) error {
					_, err := api.GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
					return err
				}},
				{"GetClusterInfo (answer not decoded)", func(ctx context.Context, api nimbusv1.NimbusServiceClient) error {
					// The load generator shares the cores: decoding a
					// multi-megabyte answer per call would measure it, not the
					// nimbus. What decoding costs a client is a row of its own.
					_, err := api.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{}, grpc.ForceCodecV2(undecoded{}))
					return err
				}},
				{"GetClusterInfo, one topology", func(ctx context.Context, api nimbusv1.NimbusServiceClient) error {
					resp, err := api.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{
						Topologies: []string{tinyName(sz.topologies / 2)}, OmitNimbuses: true, OmitSupervisors: true,
					})
					if err == nil && len(resp.GetCluster().GetTopologies()) != 1 {
						err = fmt.Errorf("%d topologies in the answer, want 1", len(resp.GetCluster().GetTopologies()))
					}
					return err
				}},
				{"GetTopologyInfo", func(ctx context.Context, api nimbusv1.NimbusServiceClient) error {
					_, err := api.GetTopologyInfo(ctx, &nimbusv1.GetTopologyInfoRequest{Name: tinyName(sz.topologies / 2)})
					return err
				}},
			} {
				if err := readLoad(rep, z.Addr(), conn, target.name, target.p, rpc.name, rpc.call); err != nil {
					b.Fatal(err)
				}
			}
		}
		// The same summaries over Storm's REST API.
		for _, target := range []struct {
			name string
			p    *testcluster.Process
		}{{"leader", leader}, {"follower", followers[0]}} {
			for _, path := range []string{"/api/v1/cluster/summary", "/api/v1/topology/summary"} {
				if err := httpLoad(rep, z.Addr(), conn, target.name, target.p, path); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	rep.reads = medianRounds(rep.reads)

	if cs, err := c.API(followers[0]).GetClusterInfo(context.Background(), &nimbusv1.GetClusterInfoRequest{}); err == nil {
		rep.add("GetClusterInfo answer", fmt.Sprintf("%d topologies, %d supervisors, %d bytes",
			len(cs.GetCluster().GetTopologies()), len(cs.GetCluster().GetSupervisors()), proto.Size(cs)))
		rep.add("decoding that answer in a Go client (one core, median of 20)", decodeCost(cs))
	}

	// Failover.
	if err := scaleFailover(rep, c, leader); err != nil {
		b.Fatal(err)
	}
	rep.print()
	return rep
}

// scaleLeader waits for the nimbuses to agree on a leader.
func scaleLeader(b *testing.B, c *testcluster.Cluster) (*testcluster.Process, []*testcluster.Process) {
	var leader *testcluster.Process
	if err := testcluster.Poll(30*time.Second, func() error {
		_, p, err := c.AgreedLeader(c.Live())
		leader = p
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var followers []*testcluster.Process
	for _, p := range c.Live() {
		if p != leader {
			followers = append(followers, p)
		}
	}
	return leader, followers
}

// tinyName is the name of the i-th topology submitTiny submits.
func tinyName(i int) string { return fmt.Sprintf("tiny-%05d", i) }

// submitTiny submits n topologies of one worker and a 1 KiB artifact,
// 8 at a time; progress, if not nil, hears each count submitted.
func submitTiny(cl *client.Client, n int, progress func(done int)) error {
	return submitSpecs(cl, n, func(i int) *nimbusv1.TopologySpec {
		return &nimbusv1.TopologySpec{
			Name: tinyName(i), NumWorkers: 1,
			Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
			WorkerCommand: []string{"/bin/true"},
		}
	}, progress)
}

// submitSpecs submits the n topologies specOf describes, each with a 1 KiB
// artifact, 8 at a time; progress, if not nil, hears each count submitted.
func submitSpecs(cl *client.Client, n int, specOf func(i int) *nimbusv1.TopologySpec, progress func(done int)) error {
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		errs       []error
	)
	artifact := bytes.Repeat([]byte("x"), 1024)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				spec := specOf(i)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil)
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("submit %s: %w", spec.Name, err))
					mu.Unlock()
					return
				}
				d := done.Add(1)
				if d%100 == 0 {
					fmt.Fprintf(os.Stderr, "scale: %d topologies submitted\n", d)
				}
				if progress != nil {
					progress(int(d))
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// placed counts the assignments with every executor placed, reading them
// 32 at a time.
func placed(conn *zk.Conn) (int, error) {
	dir := cluster.Paths{Root: scaleRoot}.Assignments()
	ids, _, err := conn.Children(dir)
	if err != nil {
		return 0, err
	}
	var (
		next, n atomic.Int64
		wg      sync.WaitGroup
	)
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
				data, _, err := conn.Get(dir + "/" + ids[i])
				a := new(clusterv1.Assignment)
				if err == nil && cluster.Decode(dir, data, a) == nil && len(a.GetExecutors()) > 0 {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(n.Load()), nil
}

// sessionOf is the ZooKeeper session of a nimbus: the owner of its
// registration.
func sessionOf(conn *zk.Conn, p *testcluster.Process) (int64, error) {
	_, stat, err := conn.Get(cluster.Paths{Root: scaleRoot}.Nimbus(p.Addr()))
	if err != nil {
		return 0, fmt.Errorf("%s's registration: %w", p.Name, err)
	}
	return stat.EphemeralOwner, nil
}

// steadyState measures, over -scale-steady-secs with every supervisor
// heartbeating: the leader's CPU and memory, and the ZooKeeper requests
// the supervisors and each nimbus send, per heartbeat.
func steadyState(rep *scaleReport, zkAddr string, conn *zk.Conn, leader *testcluster.Process, followers []*testcluster.Process, sims *simSupervisors) error {
	nimbuses := append([]*testcluster.Process{leader}, followers...)
	sids := map[*testcluster.Process]int64{}
	for _, p := range nimbuses {
		sid, err := sessionOf(conn, p)
		if err != nil {
			return err
		}
		sids[p] = sid
	}
	window := time.Duration(*scaleSteadySecs) * time.Second
	before, err := cons(zkAddr)
	if err != nil {
		return err
	}
	cpu0, err := procCPU(leader.Pid())
	if err != nil {
		return err
	}
	beats0, failed0 := sims.beats.Load(), sims.failed.Load()
	cpu := startCPUMeter(rep.pids)
	profiled := profile(leader, window/2, "steady-leader")
	start := time.Now()
	<-time.After(window) // the measurement window, not a wait for a condition
	elapsed := time.Since(start)
	profiled()
	rep.add("CPU at steady state, cores", cpu)
	after, err := cons(zkAddr)
	if err != nil {
		return err
	}
	cpu1, err := procCPU(leader.Pid())
	if err != nil {
		return err
	}
	beats, failed := sims.beats.Load()-beats0, sims.failed.Load()-failed0
	rss, err := rssMiB(leader.Pid())
	if err != nil {
		return err
	}
	rep.add(fmt.Sprintf("leader at steady state (%v window): CPU, resident memory", elapsed.Round(time.Second)),
		fmt.Sprintf("%.1f%% of one core, %d MiB", 100*float64(cpu1-cpu0)/float64(elapsed), rss))
	rep.nums[costSteadyCPU] = 100 * float64(cpu1-cpu0) / float64(elapsed)
	rep.nums[costSteadyRSS] = float64(rss)
	supReqs, supPackets := requests(before, after, sims.sessions())
	rep.add("heartbeats in the window (failed)", fmt.Sprintf("%d (%d)", beats, failed))
	rep.add("ZooKeeper requests per heartbeat: the supervisor's", fmt.Sprintf("%.3f (packets with pings: %.3f)", per(supReqs, beats), per(supPackets, beats)))
	var all int64
	for _, p := range nimbuses {
		r, _ := requests(before, after, map[int64]bool{sids[p]: true})
		all += r
		role := "follower"
		if p == leader {
			role = "leader"
		}
		rep.add(fmt.Sprintf("ZooKeeper requests in the window: %s (%s)", p.Name, role), fmt.Sprintf("%d (%.3f per heartbeat)", r, per(r, beats)))
	}
	rep.add("ZooKeeper requests per heartbeat, all told", fmt.Sprintf("%.3f", per(supReqs+all, beats)))
	return nil
}

func per(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// readLoad calls rpc on p from -scale-clients goroutines over 4
// connections for -scale-read-secs, and reports throughput, latency and
// the ZooKeeper requests p sent meanwhile.
func readLoad(rep *scaleReport, zkAddr string, conn *zk.Conn, role string, p *testcluster.Process, rpc string,
	call func(context.Context, nimbusv1.NimbusServiceClient) error) error {
	var apis []nimbusv1.NimbusServiceClient
	for range 4 {
		cc, err := grpc.NewClient(p.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		apis = append(apis, nimbusv1.NewNimbusServiceClient(cc))
	}
	callers := make([]nimbusv1.NimbusServiceClient, *scaleClients)
	for i := range callers {
		callers[i] = apis[i%len(apis)]
	}
	return measure(rep, zkAddr, conn, role, p, rpc, callers, call)
}

// httpLoad is readLoad for a GET of path on p's REST API, from
// -scale-clients goroutines sharing one HTTP client (keep-alive
// connections, as many as callers). The callers accept gzip, as browsers
// and HTTP libraries do, and read the answer without decoding it: the
// load generator shares the cores (as for GetClusterInfo).
func httpLoad(rep *scaleReport, zkAddr string, conn *zk.Conn, role string, p *testcluster.Process, path string) error {
	tr := &http.Transport{MaxIdleConnsPerHost: *scaleClients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	callers := make([]*http.Client, *scaleClients)
	for i := range callers {
		callers[i] = hc
	}
	url := p.UIURL() + path
	return measure(rep, zkAddr, conn, role, p, "GET "+path+" (gzip, not decoded)", callers, func(ctx context.Context, hc *http.Client) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// measure calls call back to back from each of callers for
// -scale-read-secs, after one warm-up call each, and reports throughput,
// latency and the ZooKeeper requests p sent meanwhile.
func measure[C any](rep *scaleReport, zkAddr string, conn *zk.Conn, role string, p *testcluster.Process, what string,
	callers []C, call func(context.Context, C) error) error {
	if *scaleRows != "" && !regexp.MustCompile(*scaleRows).MatchString(what+" "+role) {
		return nil
	}
	sid, err := sessionOf(conn, p)
	if err != nil {
		return err
	}
	for _, c := range callers { // connected and warm before the clock starts
		if err := call(context.Background(), c); err != nil {
			return fmt.Errorf("%s on %s: %w", what, p.Name, err)
		}
	}
	before, err := cons(zkAddr)
	if err != nil {
		return err
	}
	window := time.Duration(*scaleReadSecs) * time.Second
	name := strings.NewReplacer(" ", "-", "/", "_").Replace(what) + "-" + role
	profiled, stopSelf := profile(p, window, name), profileSelf(name+"-bench")
	cpu := startCPUMeter(rep.pids)
	start := time.Now()
	lats, err := callBackToBack(callers, start.Add(window), call)
	elapsed := time.Since(start)
	stopSelf()
	profiled()
	if err != nil {
		return fmt.Errorf("%s on %s: %w", what, p.Name, err)
	}
	after, err := cons(zkAddr)
	if err != nil {
		return err
	}
	zkReqs, _ := requests(before, after, map[int64]bool{sid: true})
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	rep.reads = append(rep.reads, readRow{
		rpc: what, role: role, n: len(lats), rate: float64(len(lats)) / elapsed.Seconds(),
		p50: percentile(lats, 50), p99: percentile(lats, 99), zkReqs: zkReqs, cpu: cpu.String(),
		perCall: cpu.of(roleProcess(role)) / time.Duration(max(len(lats), 1)),
	})
	return nil
}

// callBackToBack calls call back to back from one goroutine per caller
// until end, and returns the latencies of the calls; the callers' errors, if
// any, joined (a caller stops at its first).
func callBackToBack[C any](callers []C, end time.Time, call func(context.Context, C) error) ([]time.Duration, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lats []time.Duration
		errs []error
	)
	for _, api := range callers {
		wg.Go(func() {
			var mine []time.Duration
			for t0 := time.Now(); t0.Before(end); t0 = time.Now() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := call(ctx, api)
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lats, errors.Join(errs...)
}

// scaleFailover SIGKILLs the leader and reports, from the new leader's
// log, the time from winning the lock to its first schedule done.
func scaleFailover(rep *scaleReport, c *testcluster.Cluster, old *testcluster.Process) error {
	rest := testcluster.Without(c.Live(), old)
	killed := time.Now()
	if err := old.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	var next *testcluster.Process
	if err := testcluster.Poll(60*time.Second, func() error {
		for _, p := range rest {
			if selfLeader(c, p) {
				next = p
				return nil
			}
		}
		return errors.New("no new leader")
	}); err != nil {
		return err
	}
	answered := time.Since(killed)
	var elapsed int64
	var attrs map[string]any
	if err := testcluster.Poll(60*time.Second, func() error {
		var err error
		attrs, err = lastLogged(next.LogPath, "term's first schedule done")
		if err != nil {
			return err
		}
		ms, ok := attrs["elapsed_ms"].(float64)
		if !ok {
			return fmt.Errorf("no elapsed_ms in %v", attrs)
		}
		elapsed = int64(ms)
		return nil
	}); err != nil {
		return err
	}
	rep.nums[costFirstSchedule] = float64(elapsed)
	rep.add("failover: the lock won to the first schedule done (new leader's log)",
		fmt.Sprintf("%d ms (%v topologies, %v supervisors)", elapsed, attrs["topologies"], attrs["supervisors"]))
	// ZooKeeper counts the session timeout from the last packet it had, a
	// ping up to a third of it before the kill.
	rep.add(fmt.Sprintf("failover: leader SIGKILLed to the new one answering GetLeader (session timeout %v)", scaleSession),
		answered.Round(time.Millisecond))
	return nil
}

// lastLogged returns the attributes of the last JSON log line of path
// whose message is msg.
func lastLogged(path, msg string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var found map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(msg)) {
			continue
		}
		var entry map[string]any
		if json.Unmarshal(sc.Bytes(), &entry) == nil && entry["msg"] == msg {
			found = entry
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no %q yet", path, msg)
	}
	return found, sc.Err()
}

// longestRound finds, in a leader's log, its longest scheduling round that
// wrote assignments, and how many it wrote.
func longestRound(path string) (ms, topologies int64, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var entry struct {
			Msg        string `json:"msg"`
			ElapsedMS  int64  `json:"elapsed_ms"`
			Topologies int64  `json:"topologies"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "assignments written" && entry.ElapsedMS >= ms {
			ms, topologies = entry.ElapsedMS, entry.Topologies
		}
	}
	if topologies == 0 {
		return 0, 0, fmt.Errorf("%s: no round wrote assignments", path)
	}
	return ms, topologies, nil
}

// histogram reads a histogram's sum and count from p's metrics.
func histogram(p *testcluster.Process, name string) (sum float64, count int64, err error) {
	body, err := p.Metrics()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case name + "_sum":
			sum, _ = strconv.ParseFloat(f[1], 64)
		case name + "_count":
			count, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if count == 0 {
		return 0, 0, fmt.Errorf("%s: no %s", p.Name, name)
	}
	return sum, count, nil
}

// maxBucket is the smallest bucket bound that holds every observation.
func maxBucket(p *testcluster.Process, name string) string {
	body, err := p.Metrics()
	if err != nil {
		return "?"
	}
	_, count, _ := histogram(p, name)
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"_bucket{le=\"") {
			continue
		}
		f := strings.Fields(line)
		if n, _ := strconv.ParseInt(f[len(f)-1], 10, 64); n == count {
			le := strings.TrimSuffix(strings.TrimPrefix(f[0], name+"_bucket{le=\""), "\"}")
			if v, err := strconv.ParseFloat(le, 64); err == nil {
				return fmt.Sprintf("<= %g ms", v*1000)
			}
			return le
		}
	}
	return "?"
}

// rssMiB is a process's resident memory.
func rssMiB(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.Atoi(f[1])
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// scaleReport collects the numbers for the table.
type scaleReport struct {
	size  scaleSize
	rows  [][2]string
	reads []readRow
	pids  map[string]int     // the processes whose CPU rows report
	nums  map[string]float64 // the costs the curve compares across sizes, by name (scalecurve_test.go)
}

type readRow struct {
	rpc, role string
	n         int
	rate      float64
	p50, p99  time.Duration
	zkReqs    int64
	cpu       string        // each process's CPU over the row, in cores
	perCall   time.Duration // the answering nimbus's CPU per call
	// Of a row measured in rounds (medianRounds): how many, and the
	// least and most CPU per call among them.
	rounds           int
	fastest, slowest time.Duration
}

// medianRounds makes each row measured in several rounds one row, in the
// order rows first came: the round whose CPU per call is the median (the
// slower middle one of an even count), with the rounds' spread beside it.
// One noisy round then moves neither the row nor the curve's ratios.
func medianRounds(rounds []readRow) []readRow {
	type key struct{ rpc, role string }
	var order []key
	byRow := map[key][]readRow{}
	for _, r := range rounds {
		k := key{r.rpc, r.role}
		if byRow[k] == nil {
			order = append(order, k)
		}
		byRow[k] = append(byRow[k], r)
	}
	out := make([]readRow, 0, len(order))
	for _, k := range order {
		rs := byRow[k]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].perCall < rs[j].perCall })
		median := rs[len(rs)/2]
		median.rounds, median.fastest, median.slowest = len(rs), rs[0].perCall, rs[len(rs)-1].perCall
		out = append(out, median)
	}
	return out
}

func (r *scaleReport) add(what string, value any, args ...any) {
	if len(args) > 0 {
		what = fmt.Sprintf(what, args...)
	}
	r.rows = append(r.rows, [2]string{what, fmt.Sprint(value)})
	fmt.Fprintf(os.Stderr, "scale: %s: %v\n", what, value)
}

func (r *scaleReport) print() { fmt.Fprint(os.Stderr, r.markdown(cpuModel())) }

// markdown is the report as markdown: a line on the size and machine, the
// read-path table, the other rows.
func (r *scaleReport) markdown(model string) string {
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d supervisors, %d topologies; %d cores (%s), %s", r.size.supervisors, r.size.topologies, runtime.NumCPU(), model, runtime.Version())
	if len(r.reads) > 0 && r.reads[0].rounds > 1 {
		fmt.Fprintf(&out, "; each read row is the median of %d rounds (by CPU per call), the rows taken in turn each round", r.reads[0].rounds)
	}
	out.WriteString("\n\n")
	fmt.Fprintf(&out, "| rpc | nimbus | calls | per second | p50 | p99 | its CPU per call | ZooKeeper requests by that nimbus | CPU, cores |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.reads {
		perCall := fmt.Sprint(x.perCall.Round(time.Microsecond))
		if x.rounds > 1 {
			perCall += fmt.Sprintf(" (median of %d: %v-%v)", x.rounds, x.fastest.Round(time.Microsecond), x.slowest.Round(time.Microsecond))
		}
		fmt.Fprintf(&out, "| %s | %s | %d | %.0f | %v | %v | %s | %d | %s |\n", x.rpc, x.role, x.n, x.rate,
			x.p50.Round(time.Microsecond), x.p99.Round(time.Microsecond), perCall, x.zkReqs, x.cpu)
	}
	fmt.Fprintf(&out, "\n| what | value |\n|---|---|\n")
	for _, row := range r.rows {
		fmt.Fprintf(&out, "| %s | %s |\n", row[0], row[1])
	}
	return out.String()
}
