package bench

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

var (
	securityRounds       = flag.Int("security-rounds", 3, "alternating off/on rounds of each read load")
	securityReadSecs     = flag.Int("security-read-secs", 5, "seconds of one read load (per rpc, mode and round)")
	securityCallers      = flag.Int("security-callers", 32, "concurrent callers of the read load, each on a connection of its own")
	securityTopologies   = flag.Int("security-topologies", 50, "small topologies on the read-path clusters")
	securityDialTrials   = flag.Int("security-dial-trials", 50, "new connections timed per mode")
	securitySubmitTrials = flag.Int("security-submit-trials", 20, "20 MiB submits per mode and min replication")
)

const (
	securitySubmitBytes = 20 << 20
	securitySession     = 10 * time.Second
	// benchUserPrincipal is the benchmark's client on the secure cluster: a
	// plain user (nimbus.users), not an admin, that submits, kills its
	// own topologies and reads.
	benchUserPrincipal = "bench-user"
)

// BenchmarkSecurity measures what security costs: the same cluster shape
// (3 nimbuses on one ZooKeeper, localfs) with security off and with it on
// (testcluster.WithSecurity: mutual TLS, so every call authenticated and
// authorized, and ZooKeeper digest ACLs), both clusters up side by side in
// the same run, the measurements alternating between them. On the secure
// cluster the benchmark's client is benchUserPrincipal, listed in
// nimbus.users, never the admin, and it loads its certificate as the SDK's
// users do (package certs). It measures GetLeader and
// GetClusterInfo throughput and latency against the leader with
// -security-callers callers, each on one connection of its own kept for the
// whole run (a TLS handshake is per connection, so it is not in these
// figures); a new connection's first GetLeader, handshake included,
// separately; and the latency of 20 MiB submits with
// topology.min.replication.count 1 and 3. It prints markdown tables with
// the on/off ratios against the cost security may add (reads at most 10%
// slower, submits at most 5%).
func BenchmarkSecurity(b *testing.B) {
	if *securityRounds < 1 || *securityReadSecs < 1 || *securityCallers < 1 || *securityDialTrials < 1 || *securitySubmitTrials < 1 {
		b.Fatal("-security-rounds, -security-read-secs, -security-callers, -security-dial-trials and -security-submit-trials must be at least 1")
	}
	z := testcluster.StartZooKeeper(b)
	modes := []securityMode{insecureMode(), secureMode(b, testcluster.NewSecurity(b), benchUserPrincipal)}
	rep := &securityReport{}

	// Min replication 1: the read path, new connections, submits.
	pair := startSecurityPair(b, z.Addr(), modes, 1)
	for _, sc := range pair {
		if err := securityTiny(sc.cl, *securityTopologies); err != nil {
			b.Fatalf("security %s: %v", sc.mode.name, err)
		}
		if err := sc.settled(*securityTopologies); err != nil {
			b.Fatal(err)
		}
		size, err := sc.infoSize()
		if err != nil {
			b.Fatal(err)
		}
		rep.note("security %s: GetClusterInfo answer %d bytes (%d topologies, no supervisors)", sc.mode.name, size, *securityTopologies)
	}
	refused, err := checkSecure(b, z.Addr(), pair[1])
	if err != nil {
		b.Fatal(err)
	}
	rep.note("security on, checked before timing: a caller without a certificate answered %s (%s); an anonymous ZooKeeper create under the root refused (NoAuth); every topology owned by the certificate's principal %q",
		status.Code(refused), status.Convert(refused).Message(), benchUserPrincipal)
	for _, sc := range pair {
		if err := sc.dialCallers(*securityCallers); err != nil {
			b.Fatal(err)
		}
	}
	for round := range *securityRounds {
		for _, rpc := range securityRPCs {
			for _, sc := range alternate(pair, round) {
				s, err := sc.readLoad(rpc.call, time.Duration(*securityReadSecs)*time.Second)
				if err != nil {
					b.Fatalf("security %s: %s: %v", sc.mode.name, rpc.name, err)
				}
				rep.addRead(rpc.name, sc.mode.name, s)
				fmt.Fprintf(os.Stderr, "security: round %d: %s, security %s: %.0f/s, p50 %v\n", round+1, rpc.name, sc.mode.name,
					s.rate(), percentile(s.lats, 50).Round(time.Microsecond))
			}
		}
	}
	for i := range *securityDialTrials {
		for _, sc := range alternate(pair, i) {
			d, err := sc.dialOnce()
			if err != nil {
				b.Fatalf("security %s: new connection: %v", sc.mode.name, err)
			}
			rep.add("new connection + first GetLeader", sc.mode.name, d)
		}
	}
	if err := securitySubmits(rep, pair, 1); err != nil {
		b.Fatal(err)
	}
	for _, sc := range pair {
		sc.close()
	}

	// Min replication 3: submits wait for both followers' fetches (over
	// TLS, authorized as nimbus.daemon.users, with security on).
	pair = startSecurityPair(b, z.Addr(), modes, 3)
	if err := securitySubmits(rep, pair, 3); err != nil {
		b.Fatal(err)
	}
	for _, sc := range pair {
		sc.close()
	}
	rep.print(b)
}

var securityRPCs = []struct {
	name string
	call func(context.Context, nimbusv1.NimbusServiceClient) error
}{
	{"GetLeader", func(ctx context.Context, api nimbusv1.NimbusServiceClient) error {
		_, err := api.GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		return err
	}},
	{"GetClusterInfo", func(ctx context.Context, api nimbusv1.NimbusServiceClient) error {
		_, err := api.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
		return err
	}},
}

// alternate returns pair in order for even i, reversed for odd: off, on,
// on, off..., so that neither mode always runs first (after the other's
// load, or its kill's clean-up).
func alternate(pair []*securityCluster, i int) []*securityCluster {
	if i%2 == 0 {
		return pair
	}
	return []*securityCluster{pair[1], pair[0]}
}

// securityTiny submits n topologies of one worker and a 1 KiB artifact,
// one after the other, each claiming the owner that the benchmark's
// certificate names: with security off the claim is the owner, with it on
// the certificate is, so both clusters answer GetClusterInfo with the same
// bytes.
func securityTiny(cl *client.Client, n int) error {
	artifact := bytes.Repeat([]byte("x"), 1024)
	for i := range n {
		spec := &nimbusv1.TopologySpec{
			Name: fmt.Sprintf("tiny-%05d", i), NumWorkers: 1, Owner: benchUserPrincipal,
			Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
			WorkerCommand: []string{"/bin/true"},
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil)
		cancel()
		if err != nil {
			return fmt.Errorf("submit %s: %w", spec.Name, err)
		}
	}
	return nil
}

// securityMode is one side of the comparison: security off (sec nil) or
// on.
type securityMode struct {
	name string // "off" or "on"
	sec  *testcluster.Security
	user testcluster.Identity // the benchmark's client, with sec
	// creds are the benchmark client's: plaintext, or TLS with user's
	// certificate loaded by package certs (certs.Load, ClientCredentials),
	// as stormctl and the SDK's users load theirs, so that the client's
	// side of every handshake and call is the real one (not
	// Identity.Credentials, crypto/tls alone). Made once: a dial timed
	// does not make them.
	creds credentials.TransportCredentials
}

// insecureMode is security off: plaintext, no authorization, open
// ZooKeeper nodes.
func insecureMode() securityMode {
	return securityMode{name: "off", creds: insecure.NewCredentials()}
}

// secureMode is security on with sec, the benchmark's client acting as
// principal (sec.Client). It fails the benchmark if the certificate
// cannot be made or loaded.
func secureMode(b *testing.B, sec *testcluster.Security, principal string) securityMode {
	user := sec.Client(b, principal)
	r, err := certs.Load(certs.Files{Cert: user.Cert, Key: user.Key, Truststore: user.Truststore}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	return securityMode{name: "on", sec: sec, user: user, creds: r.ClientCredentials()}
}

// clusterOptions turn security on in a Cluster (testcluster.WithSecurity)
// in mode on.
func (m securityMode) clusterOptions() []testcluster.ClusterOption {
	if m.sec == nil {
		return nil
	}
	return []testcluster.ClusterOption{testcluster.WithSecurity(m.sec)}
}

// nimbusOptions list the benchmark's client among the users allowed to
// submit (nimbus.users; WithSecurity names only the admin and the
// daemons), with others, in mode on.
func (m securityMode) nimbusOptions() []testcluster.DaemonOption {
	if m.sec == nil {
		return nil
	}
	return []testcluster.DaemonOption{testcluster.WithArgs("--"+configs.KeyNimbusUsers, "alice,bob,"+m.user.Principal)}
}

// dial returns a new connection to addr of the caller's own (not the
// Cluster's shared one) with the mode's credentials, as a new client
// makes: it connects at its first call.
func (m securityMode) dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(m.creds))
}

// client returns an SDK client for seeds with the mode's credentials.
func (m securityMode) client(seeds []string) (*client.Client, error) {
	return client.New(seeds, client.WithTransportCredentials(m.creds))
}

// api is p's NimbusService on the Cluster's shared connection, as the
// benchmark's client (untimed calls: waits and checks).
func (m securityMode) api(c *testcluster.Cluster, p *testcluster.Process) nimbusv1.NimbusServiceClient {
	if m.sec == nil {
		return c.API(p)
	}
	return c.APIAs(p, m.user)
}

// securityCluster is one side's cluster: 3 nimbuses, its leader, an SDK
// client and the leader's API, all as the mode's client.
type securityCluster struct {
	mode    securityMode
	c       *testcluster.Cluster
	leader  *testcluster.Process
	cl      *client.Client
	api     nimbusv1.NimbusServiceClient // the leader's, untimed
	callers []*grpc.ClientConn           // the read load's, one per caller
}

// startSecurityPair starts the off and the on cluster, each of 3 nimbuses
// with topology.min.replication.count minRepl, under roots of their own.
func startSecurityPair(b *testing.B, zkAddr string, modes []securityMode, minRepl int) []*securityCluster {
	var pair []*securityCluster
	for _, m := range modes {
		c := testcluster.New(b, zkAddr, append(m.clusterOptions(),
			testcluster.WithRoot(fmt.Sprintf("/bench-security-%s-min%d", m.name, minRepl)),
			testcluster.WithSessionTimeout(securitySession), testcluster.WithLogf(discard))...)
		opts := append(m.nimbusOptions(), testcluster.WithArgs("--topology.min.replication.count", fmt.Sprint(minRepl),
			"--nimbus.max.artifact.bytes", fmt.Sprint(64<<20)))
		c.StartNimbuses(b, 3, opts...)
		_, leader := c.WaitLeader(b, c.Live(), 30*time.Second)
		cl, err := m.client(testcluster.Addrs(c.Live()...))
		if err != nil {
			b.Fatal(err)
		}
		pair = append(pair, &securityCluster{mode: m, c: c, leader: leader, cl: cl, api: m.api(c, leader)})
	}
	return pair
}

func (sc *securityCluster) close() {
	for _, cc := range sc.callers {
		cc.Close()
	}
	sc.cl.Close()
	sc.c.Close() // and its shared connections
}

// settled waits until the leader lists n topologies and both followers
// hold all their code (eligible standbys), so that no fetch runs beside
// the measurements.
func (sc *securityCluster) settled(n int) error {
	err := testcluster.Poll(5*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cs, err := sc.api.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
		if err != nil {
			return err
		}
		if got := len(cs.GetCluster().GetTopologies()); got != n {
			return fmt.Errorf("%d of %d topologies listed", got, n)
		}
		if s := cs.GetCluster().GetEligibleStandbys(); s != 2 {
			return fmt.Errorf("%d eligible standbys", s)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("security %s: %w", sc.mode.name, err)
	}
	return nil
}

func (sc *securityCluster) infoSize() (int, error) {
	cs, err := sc.api.GetClusterInfo(context.Background(), &nimbusv1.GetClusterInfoRequest{})
	if err != nil {
		return 0, err
	}
	return proto.Size(cs), nil
}

// checkSecure makes sure the on cluster is secure before timing it: a
// caller with no certificate (through TLS, with no identity) is answered
// UNAUTHENTICATED, an anonymous ZooKeeper client may not create under the
// root, and the topologies are owned by the benchmark's principal.
func checkSecure(b *testing.B, zkAddr string, sc *securityCluster) (refused error, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused = sc.c.APIAs(sc.leader, sc.mode.sec.Anonymous()).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
	if status.Code(refused) != codes.Unauthenticated {
		return nil, fmt.Errorf("security on: GetLeader without a client certificate: %v, want %v", refused, codes.Unauthenticated)
	}
	conn := testcluster.ConnectZooKeeper(b, securitySession, zkAddr)
	if _, err := conn.Create(sc.c.Root+"/bench-anonymous", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		return nil, fmt.Errorf("security on: anonymous ZooKeeper create under %s: %v, want %v", sc.c.Root, err, zk.ErrNoAuth)
	}
	conn.Close()
	cs, err := sc.api.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
	if err != nil {
		return nil, err
	}
	for _, t := range cs.GetCluster().GetTopologies() {
		if t.GetOwner() != benchUserPrincipal {
			return nil, fmt.Errorf("security on: %s owned by %q, want %q", t.GetName(), t.GetOwner(), benchUserPrincipal)
		}
	}
	return refused, nil
}

// dialCallers opens the read load's connections to the leader, one per
// caller, and makes one call on each: connected (and handshaken) before
// any clock starts.
func (sc *securityCluster) dialCallers(n int) error {
	for range n {
		cc, err := sc.mode.dial(sc.leader.Addr())
		if err != nil {
			return err
		}
		sc.callers = append(sc.callers, cc)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = nimbusv1.NewNimbusServiceClient(cc).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		cancel()
		if err != nil {
			return fmt.Errorf("security %s: caller's connection: %w", sc.mode.name, err)
		}
	}
	return nil
}

// readSample is one read load: its latencies, wall time, and the CPU the
// leader and this process (the callers) used meanwhile.
type readSample struct {
	lats                 []time.Duration
	elapsed              time.Duration
	leaderCPU, clientCPU time.Duration
}

func (s readSample) rate() float64 { return float64(len(s.lats)) / s.elapsed.Seconds() }

// readLoad calls call on the leader from every caller's connection, back
// to back, for d.
func (sc *securityCluster) readLoad(call func(context.Context, nimbusv1.NimbusServiceClient) error, d time.Duration) (readSample, error) {
	lcpu0, err := procCPU(sc.leader.Pid())
	if err != nil {
		return readSample{}, err
	}
	ccpu0, err := procCPU(os.Getpid())
	if err != nil {
		return readSample{}, err
	}
	var apis []nimbusv1.NimbusServiceClient
	for _, cc := range sc.callers {
		apis = append(apis, nimbusv1.NewNimbusServiceClient(cc))
	}
	start := time.Now()
	lats, err := callBackToBack(apis, start.Add(d), call)
	s := readSample{lats: lats, elapsed: time.Since(start)}
	if err != nil {
		return s, err
	}
	lcpu1, err := procCPU(sc.leader.Pid())
	if err != nil {
		return s, err
	}
	ccpu1, err := procCPU(os.Getpid())
	if err != nil {
		return s, err
	}
	s.leaderCPU, s.clientCPU = lcpu1-lcpu0, ccpu1-ccpu0
	return s, nil
}

// dialOnce times a new connection's first GetLeader: TCP connect, with
// security on the TLS handshake (both certificates verified), HTTP/2 set-up
// and the call.
func (sc *securityCluster) dialOnce() (time.Duration, error) {
	start := time.Now()
	cc, err := sc.mode.dial(sc.leader.Addr())
	if err != nil {
		return 0, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := nimbusv1.NewNimbusServiceClient(cc).GetLeader(ctx, &nimbusv1.GetLeaderRequest{}); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// securitySubmits times -security-submit-trials 20 MiB submits on each
// cluster of pair, alternating between them, after one untimed submit
// each. Each topology is killed, and gone from the leader's list, before
// the next submit.
func securitySubmits(rep *securityReport, pair []*securityCluster, minRepl int) error {
	data := make([]byte, securitySubmitBytes)
	rand.Read(data)
	what := fmt.Sprintf("submit 20 MiB, min replication %d", minRepl)
	cpu := map[string]time.Duration{}
	for i := -1; i < *securitySubmitTrials; i++ {
		for _, sc := range alternate(pair, i+1) {
			name := fmt.Sprintf("sec-min%d-%d", minRepl, i)
			if i < 0 {
				name = fmt.Sprintf("sec-min%d-warm", minRepl)
			}
			d, c, err := sc.submit(name, data)
			if err != nil {
				return fmt.Errorf("security %s: %s: %w\n%s", sc.mode.name, name, err, sc.c.Logs(20))
			}
			if i >= 0 {
				rep.add(what, sc.mode.name, d)
				cpu[sc.mode.name] += c
			}
		}
	}
	off, on := cpu["off"]/time.Duration(*securitySubmitTrials), cpu["on"]/time.Duration(*securitySubmitTrials)
	// TLS encrypts and decrypts the artifact once per hop: the client's
	// upload, and with min replication 3 each follower's fetch too.
	passes := 2
	if minRepl == 3 {
		passes = 6
	}
	rate := gcmRate()
	rep.note("%s: CPU until acknowledged (3 nimbuses and the client), mean per submit: off %v, on %v, on-off %v; AES-128-GCM seals %.1f GB/s on one core here, so the %d sealings or openings of 20 MiB on the way cost %v",
		what, off.Round(time.Millisecond), on.Round(time.Millisecond), (on - off).Round(time.Millisecond),
		rate/1e9, passes, time.Duration(float64(passes*securitySubmitBytes)/rate*float64(time.Second)).Round(time.Millisecond))
	return nil
}

// gcmRate measures AES-128-GCM (TLS 1.3's cipher here) in bytes per second
// on one core, sealing 16 KiB records as TLS does.
func gcmRate() float64 {
	blk, err := aes.NewCipher(make([]byte, 16))
	if err != nil {
		panic(err)
	}
	gcm, err := cipher.NewGCM(blk)
	if err != nil {
		panic(err)
	}
	record, nonce := make([]byte, 16<<10), make([]byte, gcm.NonceSize())
	out := make([]byte, 0, len(record)+gcm.Overhead())
	const records = 4096 // 64 MiB
	start := time.Now()
	for range records {
		out = gcm.Seal(out[:0], nonce, record, nil)
	}
	return float64(records*len(record)) / time.Since(start).Seconds()
}

// processesCPU is the CPU time used so far by the cluster's live daemons
// and this process.
func (sc *securityCluster) processesCPU() (time.Duration, error) {
	pids := []int{os.Getpid()}
	for _, p := range sc.c.Live() {
		pids = append(pids, p.Pid())
	}
	var total time.Duration
	for _, pid := range pids {
		c, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		total += c
	}
	return total, nil
}

// submit submits one topology with data as its artifact and returns the
// time to the acknowledgement and the CPU the cluster and the client used
// until then; then kills it and waits until the leader no longer lists it.
func (sc *securityCluster) submit(name string, data []byte) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cpu0, err := sc.processesCPU()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	_, err = sc.cl.SubmitTopology(ctx, &nimbusv1.TopologySpec{
		Name: name, NumWorkers: 1, Owner: benchUserPrincipal, Components: []*nimbusv1.ComponentSpec{{Id: "c", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact"},
	}, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		return 0, 0, err
	}
	d := time.Since(start)
	cpu1, err := sc.processesCPU()
	if err != nil {
		return 0, 0, err
	}
	zero := int32(0)
	if err := sc.cl.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: &zero}); err != nil {
		return 0, 0, fmt.Errorf("kill: %w", err)
	}
	err = testcluster.Poll(time.Minute, func() error {
		cs, err := sc.api.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
		if err != nil {
			return err
		}
		for _, t := range cs.GetCluster().GetTopologies() {
			if t.GetName() == name {
				return fmt.Errorf("%s still listed (%v)", name, t.GetStatus())
			}
		}
		return nil
	})
	return d, cpu1 - cpu0, err
}

// securityReport collects the samples of each measurement per mode.
type securityReport struct {
	reads   map[string]map[string]*readTotals // rpc -> mode
	rpcs    []string
	samples map[string]map[string][]time.Duration // what -> mode
	whats   []string
	notes   []string
}

// readTotals adds up one rpc's read loads in one mode, and keeps each
// round's rate.
type readTotals struct {
	readSample
	rates []float64
}

func (r *securityReport) addRead(rpc, mode string, s readSample) {
	if r.reads == nil {
		r.reads = map[string]map[string]*readTotals{}
	}
	if r.reads[rpc] == nil {
		r.reads[rpc] = map[string]*readTotals{}
		r.rpcs = append(r.rpcs, rpc)
	}
	t := r.reads[rpc][mode]
	if t == nil {
		t = &readTotals{}
		r.reads[rpc][mode] = t
	}
	t.lats = append(t.lats, s.lats...)
	t.elapsed += s.elapsed
	t.leaderCPU += s.leaderCPU
	t.clientCPU += s.clientCPU
	t.rates = append(t.rates, s.rate())
}

func (r *securityReport) add(what, mode string, d time.Duration) {
	if r.samples == nil {
		r.samples = map[string]map[string][]time.Duration{}
	}
	if r.samples[what] == nil {
		r.samples[what] = map[string][]time.Duration{}
		r.whats = append(r.whats, what)
	}
	r.samples[what][mode] = append(r.samples[what][mode], d)
}

func (r *securityReport) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, msg)
	fmt.Fprintf(os.Stderr, "security: %s\n", msg)
}

// perCall is a CPU time divided among n calls.
func perCall(cpu time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return (cpu / time.Duration(n)).Round(100 * time.Nanosecond)
}

// verdict says whether ratio meets a goal of at most limit (or, with
// atLeast, at least limit).
func verdict(ratio, limit float64, atLeast bool) string {
	ok := ratio <= limit
	op := "<="
	if atLeast {
		ok, op = ratio >= limit, ">="
	}
	if ok {
		return fmt.Sprintf("%s %.2f: met", op, limit)
	}
	return fmt.Sprintf("%s %.2f: missed", op, limit)
}

func (r *securityReport) print(b *testing.B) {
	var out strings.Builder
	fmt.Fprintf(&out, "\nsecurity off and on, same run: 3 nimbuses each on one ZooKeeper; %d cores (%s), %s\n", runtime.NumCPU(), cpuModel(), runtime.Version())
	fmt.Fprintf(&out, "reads: %d callers against the leader, each on its own connection kept for the run (handshakes not in these figures); %d alternating round(s) of %d s per rpc and mode\n\n",
		*securityCallers, *securityRounds, *securityReadSecs)
	fmt.Fprintf(&out, "| rpc | security | calls | per second | p50 | p99 | leader CPU per call | callers' CPU per call |\n|---|---|---|---|---|---|---|---|\n")
	for _, rpc := range r.rpcs {
		for _, mode := range []string{"off", "on"} {
			t := r.reads[rpc][mode]
			fmt.Fprintf(&out, "| %s | %s | %d | %.0f | %v | %v | %v | %v |\n", rpc, mode, len(t.lats), t.rate(),
				percentile(t.lats, 50).Round(time.Microsecond), percentile(t.lats, 99).Round(time.Microsecond),
				perCall(t.leaderCPU, len(t.lats)), perCall(t.clientCPU, len(t.lats)))
		}
	}
	fmt.Fprintf(&out, "\n| what | off | on | on/off | goal |\n|---|---|---|---|---|\n")
	for _, rpc := range r.rpcs {
		off, on := r.reads[rpc]["off"], r.reads[rpc]["on"]
		ratio := on.rate() / off.rate()
		fmt.Fprintf(&out, "| %s calls per second | %.0f | %.0f | %.3f | %s |\n", rpc, off.rate(), on.rate(), ratio, verdict(ratio, 0.90, true))
		var rounds []string
		for i := range min(len(off.rates), len(on.rates)) {
			rounds = append(rounds, fmt.Sprintf("%.3f", on.rates[i]/off.rates[i]))
		}
		fmt.Fprintf(&out, "| %s calls per second, each round | | | %s | |\n", rpc, strings.Join(rounds, ", "))
		for _, p := range []int{50, 99} {
			x, y := percentile(off.lats, p), percentile(on.lats, p)
			fmt.Fprintf(&out, "| %s p%d | %v | %v | %.3f | |\n", rpc, p, x.Round(time.Microsecond), y.Round(time.Microsecond), float64(y)/float64(x))
		}
		x, y := perCall(off.leaderCPU, len(off.lats)), perCall(on.leaderCPU, len(on.lats))
		fmt.Fprintf(&out, "| %s leader CPU per call | %v | %v | %.3f | |\n", rpc, x, y, float64(y)/float64(x))
		b.ReportMetric(ratio, strings.ToLower(rpc)+"-rate-on/off")
	}
	for _, what := range r.whats {
		off, on := r.samples[what]["off"], r.samples[what]["on"]
		for _, p := range []int{50, 99} {
			x, y := percentile(off, p), percentile(on, p)
			ratio := float64(y) / float64(x)
			goal := ""
			if repl, ok := strings.CutPrefix(what, "submit 20 MiB, min replication "); ok && p == 50 {
				goal = verdict(ratio, 1.05, false)
				b.ReportMetric(ratio, "submit-min"+repl+"-p50-on/off")
			}
			fmt.Fprintf(&out, "| %s p%d (%d trials) | %v | %v | %.3f | %s |\n", what, p, len(off), x.Round(100*time.Microsecond), y.Round(100*time.Microsecond), ratio, goal)
		}
	}
	out.WriteString("\n")
	for _, n := range r.notes {
		fmt.Fprintf(&out, "- %s\n", n)
	}
	fmt.Fprint(os.Stderr, out.String())
}

// cpuModel is the machine's CPU model name, from /proc/cpuinfo.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return "?"
}
