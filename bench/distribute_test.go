package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var distributeTrials = flag.Int("distribute-trials", 3, "200 MB distributions per code distributor backend")

const (
	distributeSize        = 200 << 20 // the artifact: 200 MiB of random bytes
	distributeNimbuses    = 3
	distributeSupervisors = 10
	distributeUplinkMbit  = 200 // the *-uplink runs: the leader sends at most 200 Mbit/s
)

// BenchmarkDistribute measures code distribution: a 200 MB artifact to 3
// nimbuses and 10 supervisors (one slot each, a topology of 10 workers),
// with localfs and with bittorrent in the same run. Per trial it times,
// from the submit call and from its acknowledgement, until every nimbus is
// a registered replica (/code-distributor/<id>) and every supervisor's
// store has installed the bundle (meta.pb in its code dir, which the store
// moves into place with the bundle by an atomic rename after verifying it).
// It counts the bytes the leader sent: its nimbus_code_sent_bytes_total
// (all transports) and, as a cross-check, /proc/<pid>/io (wchar, and wchar
// less write_bytes, which leaves out what went to its own disk). With
// topology.min.replication.count 1 the leader alone holds the code at the
// acknowledgement, so all 12 other nodes fetch at once.
func BenchmarkDistribute(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	data := make([]byte, distributeSize)
	rand.Read(data)
	var rows []string
	for _, v := range []struct {
		name, backend string
		uplinkMbit    int
	}{
		{"localfs", "localfs", 0},
		{"bittorrent", "bittorrent", 0},
		// On loopback only CPU limits anyone, and the leader, which
		// downloads nothing, has the most to spare: it serves more than its
		// share. A real leader's NIC is what BitTorrent exists to spare;
		// these runs give it one (tc on lo, on its serving ports).
		{"localfs-uplink", "localfs", distributeUplinkMbit},
		{"bittorrent-uplink", "bittorrent", distributeUplinkMbit},
	} {
		b.Run(v.name, func(b *testing.B) {
			rows = append(rows, benchDistribute(b, z.Addr(), v.name, v.backend, v.uplinkMbit, data))
		})
	}
	fmt.Fprintf(os.Stderr, "\n| backend | trials | wall from submit p50 | max | wall from ack p50 | max | ack p50 | leader sent (metric) p50 | max | leader wchar p50 | max | leader wchar - write_bytes p50 | max |\n")
	for _, r := range rows {
		fmt.Fprintln(os.Stderr, r)
	}
}

// distTrial is what one trial measured.
type distTrial struct {
	id                  string
	ack, wall           time.Duration // from the submit call
	done                map[string]time.Duration
	sentGRPC, sentBT    float64 // leader's metric, delta
	wchar, writeBytes   int64   // leader's /proc io, delta
	netWrites           map[string]int64
	fetched             map[string]time.Duration // "code fetched" elapsed, by process
	retries             map[string]int           // "retrying" warnings, by process
	retryErrs           []string                 // the first few of their errors
	cpu                 time.Duration            // user+system time of the 13 daemons
	followerSent        map[string]float64       // followers' metric deltas
	supervisorsNetTotal int64
}

// backendArgs are the daemons' flags that select backend (a BitTorrent
// peer of each daemon on a port of its own).
func backendArgs(backend string) []string {
	if backend == "bittorrent" {
		return []string{"--storm.codedistributor.class", backend, "--bittorrent.port", "0"}
	}
	return []string{"--storm.codedistributor.class", backend}
}

func benchDistribute(b *testing.B, zkAddr, name, backend string, uplinkMbit int, data []byte) string {
	common := backendArgs(backend)
	c := testcluster.New(b, zkAddr, testcluster.WithRoot("/bench-distribute-"+name),
		testcluster.WithSessionTimeout(20*time.Second), testcluster.WithLogf(discard))
	var nimbuses []*testcluster.Process
	var seeds []string
	for range distributeNimbuses {
		p, err := c.StartNimbus(testcluster.WithArgs(
			"--topology.min.replication.count", "1",
			"--nimbus.max.artifact.bytes", strconv.Itoa(2*distributeSize),
		), testcluster.WithArgs(common...))
		if err != nil {
			b.Fatal(err)
		}
		nimbuses = append(nimbuses, p)
		seeds = append(seeds, p.Addr())
	}
	var sups []*testcluster.Process
	for _, port := range testcluster.FreePorts(b, distributeSupervisors) {
		p, err := c.StartSupervisor(testcluster.WithSlots(port), testcluster.WithArgs(common...))
		if err != nil {
			b.Fatal(err)
		}
		sups = append(sups, p)
	}
	cl, err := client.New(seeds)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	sess, err := cluster.Connect(context.Background(), cluster.SessionConfig{Servers: []string{zkAddr},
		SessionTimeout: 20 * time.Second, Root: c.Root, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()

	// The leader, and its view of all 10 supervisors, before the first
	// submit: a schedule on fewer would place the workers twice.
	leader := awaitLeaderSeeing(b, c, nimbuses, distributeSupervisors)
	b.Logf("%s: leader %s (pid %d)", name, leader.Name, leader.Pid())
	if uplinkMbit > 0 {
		ports := []int{port(b, leader.Addr())}
		if backend == "bittorrent" {
			ports = append(ports, port(b, leader.TorrentAddr()))
		}
		undo, err := shapeUplink(uplinkMbit, ports...)
		if err != nil {
			b.Fatal(err)
		}
		defer undo()
	}

	var trials []distTrial
	for i := range *distributeTrials {
		topo := fmt.Sprintf("dist-%s-t%d", name, i)
		tr, err := distributeOnce(c, cl, sess, leader, nimbuses, sups, topo, data)
		if err != nil {
			b.Fatalf("%s: %v\n%s", topo, err, c.Logs(30))
		}
		trials = append(trials, tr)
		fmt.Fprintf(os.Stderr, "%s\n", tr.describe(name, i, leader, nimbuses, sups))
		// Kill it and wait until no node holds its code, so disk use stays
		// at one artifact's 13 copies.
		zero := int32(0)
		if err := cl.KillTopology(context.Background(), &nimbusv1.KillTopologyRequest{Name: topo, WaitSecs: &zero}); err != nil {
			b.Fatal(err)
		}
		if err := testcluster.Poll(2*time.Minute, func() error {
			for _, p := range append(append([]*testcluster.Process(nil), nimbuses...), sups...) {
				if _, err := os.Stat(storeDir(p, tr.id)); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("%s still holds %s (%v)", p.Name, tr.id, err)
				}
			}
			return nil
		}); err != nil {
			b.Fatalf("%v\n%s", err, c.Logs(20))
		}
	}

	var walls, fromAck, acks []time.Duration
	var sent, wchar, netw []float64
	for _, tr := range trials {
		walls = append(walls, tr.wall)
		fromAck = append(fromAck, tr.wall-tr.ack)
		acks = append(acks, tr.ack)
		sent = append(sent, (tr.sentGRPC+tr.sentBT)/distributeSize)
		wchar = append(wchar, float64(tr.wchar)/distributeSize)
		netw = append(netw, float64(tr.wchar-tr.writeBytes)/distributeSize)
	}
	b.ReportMetric(percentile(walls, 50).Seconds(), "wall-p50-s")
	b.ReportMetric(maxOf(walls).Seconds(), "wall-max-s")
	b.ReportMetric(percentile(fromAck, 50).Seconds(), "from-ack-p50-s")
	b.ReportMetric(percentileF(sent, 50), "leader-x-p50")
	b.ReportMetric(percentileF(sent, 100), "leader-x-max")
	b.ReportMetric(percentileF(wchar, 50), "leader-wchar-x-p50")
	row := fmt.Sprintf("| %s | %d | %v | %v | %v | %v | %v | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx |", name, len(trials),
		percentile(walls, 50).Round(10*time.Millisecond), maxOf(walls).Round(10*time.Millisecond),
		percentile(fromAck, 50).Round(10*time.Millisecond), maxOf(fromAck).Round(10*time.Millisecond),
		percentile(acks, 50).Round(10*time.Millisecond),
		percentileF(sent, 50), percentileF(sent, 100), percentileF(wchar, 50), percentileF(wchar, 100),
		percentileF(netw, 50), percentileF(netw, 100))
	b.Logf("%s", row)
	return row
}

// awaitLeaderSeeing waits for the agreed leader to see n supervisors.
func awaitLeaderSeeing(b *testing.B, c *testcluster.Cluster, nimbuses []*testcluster.Process, n int) *testcluster.Process {
	var leader *testcluster.Process
	if err := testcluster.Poll(60*time.Second, func() error {
		_, p, err := c.AgreedLeader(nimbuses)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		info, err := c.API(p).GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
		if err != nil {
			return err
		}
		if got := len(info.GetCluster().GetSupervisors()); got != n {
			return fmt.Errorf("the leader sees %d supervisors", got)
		}
		leader = p
		return nil
	}); err != nil {
		b.Fatalf("%v\n%s", err, c.Logs(20))
	}
	return leader
}

// distributeOnce submits name with data and waits until every nimbus and
// supervisor holds its verified code.
func distributeOnce(c *testcluster.Cluster, cl *client.Client, sess *cluster.Session, leader *testcluster.Process,
	nimbuses, sups []*testcluster.Process, name string, data []byte) (distTrial, error) {
	all := append(append([]*testcluster.Process(nil), nimbuses...), sups...)
	tr := distTrial{netWrites: map[string]int64{}, followerSent: map[string]float64{}}
	grpc0, bt0, err := sentBytes(leader)
	if err != nil {
		return tr, err
	}
	io0 := map[string]procIO{}
	var cpu0 time.Duration
	for _, p := range all {
		if io0[p.Name], err = readProcIO(p.Pid()); err != nil {
			return tr, err
		}
		cpu, err := procCPU(p.Pid())
		if err != nil {
			return tr, err
		}
		cpu0 += cpu
	}
	follower0 := map[string]float64{}
	for _, p := range nimbuses {
		if p != leader {
			g, t, err := sentBytes(p)
			if err != nil {
				return tr, err
			}
			follower0[p.Name] = g + t
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	type watched struct {
		id   string
		done map[string]time.Duration
		err  error
	}
	result := make(chan watched, 1)
	go func() {
		id, done, err := watchHolders(ctx, sess, start, nimbuses, sups, name+"-")
		result <- watched{id, done, err}
	}()
	resp, err := cl.SubmitTopology(ctx, &nimbusv1.TopologySpec{
		Name: name, NumWorkers: distributeSupervisors,
		Components: []*nimbusv1.ComponentSpec{{Id: "c", Parallelism: distributeSupervisors}},
		// The workers never touch the artifact: what is timed is the code.
		WorkerCommand: []string{"/bin/sleep", "3600"},
	}, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		cancel()
		<-result
		return tr, fmt.Errorf("submit: %w", err)
	}
	tr.ack = time.Since(start)
	w := <-result
	if w.err != nil {
		return tr, fmt.Errorf("waiting for the holders (%d of %d so far: %v): %w", len(w.done), len(all), w.done, w.err)
	}
	tr.id, tr.done = w.id, w.done
	if tr.id != resp.GetTopologyId() {
		return tr, fmt.Errorf("watched %s, submitted %s", tr.id, resp.GetTopologyId())
	}
	for _, d := range tr.done {
		tr.wall = max(tr.wall, d)
	}

	grpc1, bt1, err := sentBytes(leader)
	if err != nil {
		return tr, err
	}
	tr.sentGRPC, tr.sentBT = grpc1-grpc0, bt1-bt0
	for _, p := range all {
		io1, err := readProcIO(p.Pid())
		if err != nil {
			return tr, err
		}
		d := io1.sub(io0[p.Name])
		if p == leader {
			tr.wchar, tr.writeBytes = d.wchar, d.writeBytes
		}
		tr.netWrites[p.Name] = d.wchar - d.writeBytes
		cpu, err := procCPU(p.Pid())
		if err != nil {
			return tr, err
		}
		tr.cpu += cpu
	}
	tr.cpu -= cpu0
	for _, p := range sups {
		tr.supervisorsNetTotal += tr.netWrites[p.Name]
	}
	for _, p := range nimbuses {
		if p != leader {
			g, t, err := sentBytes(p)
			if err != nil {
				return tr, err
			}
			tr.followerSent[p.Name] = g + t - follower0[p.Name]
		}
	}
	tr.fetched, tr.retries, tr.retryErrs = fetchLogs(all, tr.id)
	return tr, nil
}

// watchHolders polls until all nimbuses are registered replicas of the
// topology whose id begins with prefix and every supervisor's store has
// installed its bundle; it returns the id and, per process, when it was
// first seen holding the code (since start).
func watchHolders(ctx context.Context, sess *cluster.Session, start time.Time, nimbuses, sups []*testcluster.Process,
	prefix string) (string, map[string]time.Duration, error) {
	byAddr := map[string]*testcluster.Process{}
	for _, p := range nimbuses {
		byAddr[p.Addr()] = p
	}
	done := map[string]time.Duration{}
	var id string
	tick := time.NewTicker(testcluster.PollInterval)
	defer tick.Stop()
	for {
		if id == "" {
			ids, _, err := sess.Conn().Children(sess.Paths().CodeDistributor())
			if err == nil {
				for _, x := range ids {
					if strings.HasPrefix(x, prefix) {
						id = x
					}
				}
			}
		}
		if id != "" {
			if replicas, err := sess.Read().Replicas(id); err == nil {
				now := time.Since(start)
				for addr := range replicas {
					if p := byAddr[addr]; p != nil {
						if _, seen := done[p.Name]; !seen {
							done[p.Name] = now
						}
					}
				}
			}
			for _, p := range sups {
				if _, seen := done[p.Name]; seen {
					continue
				}
				if _, err := os.Stat(filepath.Join(storeDir(p, id), "meta.pb")); err == nil {
					done[p.Name] = time.Since(start)
				}
			}
			if len(done) == len(nimbuses)+len(sups) {
				return id, done, nil
			}
		}
		select {
		case <-ctx.Done():
			return id, done, ctx.Err()
		case <-tick.C:
		}
	}
}

// storeDir is where a daemon's store installs a topology's bundle.
func storeDir(p *testcluster.Process, id string) string {
	kind := "supervisor"
	if strings.HasPrefix(p.Name, "nimbus") {
		kind = "nimbus"
	}
	return filepath.Join(p.LocalDir, kind, "code", id)
}

// sentBytes reads nimbus_code_sent_bytes_total from a nimbus's metrics,
// by transport.
func sentBytes(p *testcluster.Process) (grpc, bittorrent float64, err error) {
	body, err := p.Metrics()
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "nimbus_code_sent_bytes_total{") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", p.Name, line, err)
		}
		switch {
		case strings.Contains(line, `transport="grpc"`):
			grpc = v
		case strings.Contains(line, `transport="bittorrent"`):
			bittorrent = v
		}
	}
	return grpc, bittorrent, nil
}

type procIO struct{ wchar, writeBytes int64 }

func (a procIO) sub(b procIO) procIO { return procIO{a.wchar - b.wchar, a.writeBytes - b.writeBytes} }

// readProcIO reads a process's write counters: wchar counts every byte
// passed to write-like calls (sockets and files), write_bytes what it
// dirtied in the page cache for its disk.
func readProcIO(pid int) (procIO, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return procIO{}, err
	}
	var out procIO
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "wchar":
			out.wchar = n
		case "write_bytes":
			out.writeBytes = n
		}
	}
	return out, nil
}

// fetchLogs reads the daemons' "code fetched" lines (elapsed: download,
// verification and install) and counts their fetch retries for id.
func fetchLogs(ps []*testcluster.Process, id string) (map[string]time.Duration, map[string]int, []string) {
	fetched, retries := map[string]time.Duration{}, map[string]int{}
	var errs []string
	for _, p := range ps {
		f, err := os.Open(p.LogPath)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			var entry struct {
				Msg      string          `json:"msg"`
				Topology string          `json:"topology"`
				Elapsed  json.RawMessage `json:"elapsed"`
				Err      string          `json:"err"`
			}
			if json.Unmarshal(sc.Bytes(), &entry) != nil || entry.Topology != id {
				continue
			}
			switch {
			case entry.Msg == "code fetched":
				fetched[p.Name] = parseElapsed(entry.Elapsed)
			case strings.Contains(entry.Msg, "retrying"):
				retries[p.Name]++
				if len(errs) < 3 {
					errs = append(errs, p.Name+": "+entry.Err)
				}
			}
		}
		f.Close()
	}
	return fetched, retries, errs
}

// procCPU is a process's user plus system time so far (/proc/<pid>/stat,
// in clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// parseElapsed reads a duration slog wrote as JSON: integer nanoseconds,
// or a string.
func parseElapsed(raw json.RawMessage) time.Duration {
	var ns int64
	if json.Unmarshal(raw, &ns) == nil {
		return time.Duration(ns)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, _ := time.ParseDuration(s)
		return d
	}
	return 0
}

func (tr distTrial) describe(backend string, i int, leader *testcluster.Process, nimbuses, sups []*testcluster.Process) string {
	mb := func(n float64) string { return fmt.Sprintf("%.0f MB (%.2fx)", n/(1<<20), n/distributeSize) }
	var followerDone, supDone, followerFetch, supFetch []time.Duration
	for _, p := range nimbuses {
		if p != leader {
			followerDone = append(followerDone, tr.done[p.Name])
			followerFetch = append(followerFetch, tr.fetched[p.Name])
		}
	}
	var supNet []float64
	for _, p := range sups {
		supDone = append(supDone, tr.done[p.Name])
		supFetch = append(supFetch, tr.fetched[p.Name])
		supNet = append(supNet, float64(tr.netWrites[p.Name]))
	}
	var followerSent []string
	for _, p := range nimbuses {
		if p != leader {
			followerSent = append(followerSent, fmt.Sprintf("%s %s", p.Name, mb(tr.followerSent[p.Name])))
		}
	}
	retries := 0
	for _, n := range tr.retries {
		retries += n
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("%s trial %d (%s): ack %v, all 13 hold code at %v (%v after ack); followers registered at %v; "+
		"supervisors installed at min %v p50 %v max %v; \"code fetched\" elapsed: followers %v, supervisors min %v p50 %v max %v; "+
		"fetch retries %d %q; CPU of the 13 daemons %v (%.0f%% of 2 cores over the wall time); leader sent grpc %s + bittorrent %s = %s; leader /proc io: wchar %s, write_bytes %s, wchar-write_bytes %s; "+
		"followers sent (metric): %s; supervisors wchar-write_bytes: total %s, max %s",
		backend, i, tr.id, r(tr.ack), r(tr.wall), r(tr.wall-tr.ack), roundAll(followerDone),
		r(minOf(supDone)), r(percentile(supDone, 50)), r(maxOf(supDone)),
		roundAll(followerFetch), r(minOf(supFetch)), r(percentile(supFetch, 50)), r(maxOf(supFetch)),
		retries, tr.retryErrs, r(tr.cpu), 100*tr.cpu.Seconds()/(2*tr.wall.Seconds()), mb(tr.sentGRPC), mb(tr.sentBT), mb(tr.sentGRPC+tr.sentBT),
		mb(float64(tr.wchar)), mb(float64(tr.writeBytes)), mb(float64(tr.wchar-tr.writeBytes)),
		strings.Join(followerSent, ", "), mb(float64(tr.supervisorsNetTotal)), mb(percentileF(supNet, 100)))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// percentileF is percentile for plain numbers (nearest rank).
func percentileF(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

// shapeUplink limits what loopback carries from the given source ports to
// mbit Mbit/s (tc htb; needs root), as if the process serving on them had
// a NIC that slow. The leader's peers connect to it, so all it serves
// leaves from these ports. It returns the undo.
func shapeUplink(mbit int, ports ...int) (func(), error) {
	undo := func() { exec.Command("tc", "qdisc", "del", "dev", "lo", "root").Run() }
	rate := fmt.Sprintf("%dmbit", mbit)
	cmds := [][]string{
		{"qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "10", "r2q", "100000"},
		{"class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "100gbit"},
		{"class", "add", "dev", "lo", "parent", "1:", "classid", "1:20", "htb", "rate", rate, "ceil", rate, "burst", "256k", "cburst", "256k"},
	}
	for _, p := range ports {
		cmds = append(cmds, []string{"filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1",
			"u32", "match", "ip", "sport", strconv.Itoa(p), "0xffff", "flowid", "1:20"})
	}
	for _, args := range cmds {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			undo()
			return nil, fmt.Errorf("tc %s: %v: %s (the *-uplink runs need root and tc)", strings.Join(args, " "), err, out)
		}
	}
	return undo, nil
}

func port(b *testing.B, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	if err != nil || n == 0 {
		b.Fatalf("no port in %q", addr)
	}
	return n
}
