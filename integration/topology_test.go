package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestSubmitReplicatesToEveryNimbusAndKillRemovesEverywhere(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 3, testcluster.WithArgs("--topology.min.replication.count", "3"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())

	data := randomBytes(t, 1<<20)
	resp := submit(t, cl, "wordcount", data)
	if resp.GetReplicationCount() != 3 || resp.GetReplicationWaitTimedOut() {
		t.Fatalf("submit: %v, want 3 replicas without timing out", resp)
	}
	id := resp.GetTopologyId()
	// Acknowledged with min replication 3: all three hold it already.
	for _, p := range ps {
		if err := holds(p, id, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		testcluster.WaitFor(t, 5*time.Second, p.Name+" lists the topology", func() error {
			cs := clusterSummary(t, c, p)
			if len(cs.GetTopologies()) != 1 {
				return fmt.Errorf("%d topologies", len(cs.GetTopologies()))
			}
			top := cs.GetTopologies()[0]
			if top.GetId() != id || top.GetReplicationCount() != 3 || top.GetNumExecutors() != 5 ||
				top.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE {
				return fmt.Errorf("topology %v", top)
			}
			if cs.GetEligibleStandbys() != 2 || len(cs.GetLeadershipBlockedBy()) != 0 {
				return fmt.Errorf("eligible standbys %d, blocked by %v", cs.GetEligibleStandbys(), cs.GetLeadershipBlockedBy())
			}
			for _, n := range cs.GetNimbuses() {
				if !n.GetHoldsAllCode() {
					return fmt.Errorf("%s:%d does not hold all code", n.GetHost(), n.GetPort())
				}
			}
			return nil
		})
	}
	info, err := cl.GetTopologyInfo(t.Context(), "wordcount")
	if err != nil || len(info.GetReplicas()) != 3 || info.GetComponentParallelism()["bolt"] != 3 {
		t.Fatalf("GetTopologyInfo: %v, %v", info, err)
	}

	// The same name again is refused.
	dup := randomBytes(t, 1000)
	if _, err := cl.SubmitTopology(t.Context(), testSpec("wordcount"), bytes.NewReader(dup), int64(len(dup)), nil); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second submit of the name: %v, want AlreadyExists", err)
	}

	// Deactivate and activate, through any nimbus.
	for _, want := range []clusterv1.TopologyStatus{clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE} {
		var err error
		if want == clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE {
			err = cl.DeactivateTopology(t.Context(), "wordcount")
		} else {
			err = cl.ActivateTopology(t.Context(), "wordcount")
		}
		if err != nil {
			t.Fatal(err)
		}
		testcluster.WaitFor(t, 5*time.Second, "status "+want.String(), func() error {
			info, err := cl.GetTopologyInfo(t.Context(), "wordcount")
			if err != nil {
				return err
			}
			if got := info.GetTopology().GetStatus(); got != want {
				return fmt.Errorf("status %v", got)
			}
			return nil
		})
	}

	// Kill through a client that knows only a follower: the SDK follows
	// the not-leader answer to the leader.
	follower := testcluster.Without(ps, leader)[0]
	viaFollower := newClient(t, c, follower)
	if err := viaFollower.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "nosuch"}); status.Code(err) != codes.NotFound {
		t.Fatalf("kill of an unknown name: %v, want NotFound", err)
	}
	zero := int32(0)
	if err := viaFollower.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: &zero}); err != nil {
		t.Fatalf("kill via a follower: %v", err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the topology and its code gone everywhere", func() error {
		for _, p := range ps {
			if n := len(clusterSummary(t, c, p).GetTopologies()); n != 0 {
				return fmt.Errorf("%s lists %d topologies", p.Name, n)
			}
			if err := holdsNothing(p, id); err != nil {
				return err
			}
		}
		if d := zkChildren(t, conn, "/storm/code-distributor"); len(d) != 0 {
			return fmt.Errorf("distributions left: %v", d)
		}
		return nil
	})
}

func TestReplicationWaitTimesOutWithTooFewNimbuses(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--topology.min.replication.count", "3", "--topology.max.replication.wait.time.sec", "2"))
	c.WaitLeader(t, ps, 10*time.Second)
	cl := newClient(t, c, ps...)

	start := time.Now()
	resp := submit(t, cl, "lonely", randomBytes(t, 4096))
	elapsed := time.Since(start)
	if !resp.GetReplicationWaitTimedOut() || resp.GetReplicationCount() != 2 {
		t.Fatalf("submit: %v, want a timed-out wait at count 2", resp)
	}
	if elapsed < 2*time.Second {
		t.Fatalf("submit answered after %v, before the 2 s wait ended", elapsed)
	}
	t.Logf("submit with an unreachable minimum answered after %v", elapsed)
	// Acknowledged, so committed: every nimbus shows it.
	for _, p := range ps {
		testcluster.WaitFor(t, 5*time.Second, p.Name+" lists the topology", func() error {
			if n := len(clusterSummary(t, c, p).GetTopologies()); n != 1 {
				return fmt.Errorf("%d topologies", n)
			}
			return nil
		})
	}
}

func TestJoiningNimbusCatchesUpAndQueues(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	first := c.StartNimbuses(t, 1)
	c.WaitLeader(t, first, 10*time.Second)
	cl := newClient(t, c, first...)
	blobs := map[string][]byte{}
	for _, name := range []string{"a", "b"} {
		data := randomBytes(t, 256<<10)
		blobs[submit(t, cl, name, data).GetTopologyId()] = data
	}

	joiner := c.StartNimbuses(t, 1)[0]
	testcluster.WaitFor(t, 10*time.Second, "the joiner holds every topology", func() error {
		for id, data := range blobs {
			if err := holds(joiner, id, data); err != nil {
				return err
			}
		}
		return nil
	})
	c.WaitQueued(t, 2, 10*time.Second)
	testcluster.WaitFor(t, 5*time.Second, "one eligible standby", func() error {
		if n := clusterSummary(t, c, joiner).GetEligibleStandbys(); n != 1 {
			return fmt.Errorf("%d eligible standbys", n)
		}
		return nil
	})
}

// The seed's failover scenario: 4 topologies, 3 nimbuses, min replication
// 2, each follower holding part of the code when the leader dies. Only a
// nimbus that holds all 4 may lead; nothing is lost or resubmitted.
func TestFailoverGoesOnlyToANimbusHoldingAllCode(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	// Long enough that paused nimbuses keep their sessions.
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(8*time.Second))
	args := []string{"--topology.min.replication.count", "2"}
	a := c.StartNimbuses(t, 1, testcluster.WithArgs(args...))[0]
	c.WaitLeader(t, []*testcluster.Process{a}, 10*time.Second)
	rest := c.StartNimbuses(t, 2, testcluster.WithArgs(args...))
	b, cc := rest[0], rest[1]
	c.WaitQueued(t, 3, 10*time.Second)
	cl := newClient(t, c, a)

	blobs := map[string][]byte{}
	submitSome := func(names ...string) {
		for _, name := range names {
			data := randomBytes(t, 128<<10)
			resp := submit(t, cl, name, data)
			if resp.GetReplicationCount() < 2 {
				t.Fatalf("submit %s: %v", name, resp)
			}
			blobs[resp.GetTopologyId()] = data
		}
	}
	pause := func(p *testcluster.Process) {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resume := func(p *testcluster.Process) {
		if err := p.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	pause(cc)
	submitSome("t1", "t2") // on a and b
	pause(b)
	resume(cc)
	submitSome("t3", "t4") // on a and c
	ids := make([]string, 0, len(blobs))
	for id := range blobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)

	if err := a.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	resume(b)
	survivors := []*testcluster.Process{b, cc}

	// While leadership settles, whoever acts as leader holds all four.
	testcluster.WaitFor(t, 30*time.Second, "a leader holding all code, and both survivors holding it", func() error {
		leaders := 0
		for _, p := range survivors {
			st, err := c.Health(p, nimbusv1.LeaderHealthService)
			if err != nil || st.String() != "SERVING" {
				continue
			}
			leaders++
			for id, data := range blobs {
				if err := holds(p, id, data); err != nil {
					t.Fatalf("%s leads without all code: %v", p.Name, err)
				}
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d acting leaders", leaders)
		}
		for _, p := range survivors {
			for id, data := range blobs {
				if err := holds(p, id, data); err != nil {
					return err
				}
			}
		}
		return nil
	})
	// Nothing lost, nothing resubmitted: the same four ids.
	for _, p := range survivors {
		var got []string
		for _, top := range clusterSummary(t, c, p).GetTopologies() {
			got = append(got, top.GetId())
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			t.Fatalf("%s lists %v, want %v", p.Name, got, ids)
		}
	}
}

func TestWipedLeaderStepsDownAndResyncs(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--topology.min.replication.count", "2", "--nimbus.code.sync.freq.secs", "1"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	other := testcluster.Without(ps, leader)[0]
	cl := newClient(t, c, ps...)
	blobs := map[string][]byte{}
	for _, name := range []string{"w1", "w2"} {
		data := randomBytes(t, 64<<10)
		blobs[submit(t, cl, name, data).GetTopologyId()] = data
	}

	// The sweep notices the loss; the wiped leader steps down at once.
	wipeCode(t, leader)
	testcluster.WaitFor(t, 15*time.Second, "the other nimbus leading", func() error {
		if _, l, err := c.AgreedLeader(ps); err != nil || l != other {
			return fmt.Errorf("leader %v, err %v", l, err)
		}
		return nil
	})
	testcluster.WaitFor(t, 15*time.Second, "the wiped nimbus re-synced and eligible", func() error {
		for id, data := range blobs {
			if err := holds(leader, id, data); err != nil {
				return err
			}
		}
		if n := clusterSummary(t, c, other).GetEligibleStandbys(); n != 1 {
			return fmt.Errorf("%d eligible standbys", n)
		}
		return nil
	})
}

// wipeCode deletes a nimbus's local code, as a lost or replaced disk would.
func wipeCode(t *testing.T, p *testcluster.Process) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(p.LocalDir, "nimbus", "code")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p.LocalDir, "nimbus", "code"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The next in line loses its code as the leader dies: it must not lead
// (the gate when it wins the lock, or codesync withdrawing it first), the
// one after it leads, and it re-syncs and queues again by itself.
func TestNimbusWithoutCodeNeverLeads(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	// A slow sweep: only the lock hand-over can reveal the wipe.
	args := []string{"--topology.min.replication.count", "3", "--nimbus.code.sync.freq.secs", "600"}
	var ps []*testcluster.Process
	for range 3 { // started one by one: the queue order is a, b, c
		p := c.StartNimbuses(t, 1, testcluster.WithArgs(args...))[0]
		ps = append(ps, p)
		c.WaitQueued(t, len(ps), 10*time.Second)
	}
	a, b, cc := ps[0], ps[1], ps[2]
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	if leader != a {
		t.Fatalf("%s leads, want the first started", leader.Name)
	}
	cl := newClient(t, c, ps...)
	blobs := map[string][]byte{}
	for _, name := range []string{"g1", "g2"} {
		data := randomBytes(t, 64<<10)
		blobs[submit(t, cl, name, data).GetTopologyId()] = data
	}

	wipeCode(t, b)
	if err := a.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	survivors := []*testcluster.Process{b, cc}
	testcluster.WaitFor(t, 20*time.Second, "c leading and b re-synced", func() error {
		if st, err := c.Health(b, nimbusv1.LeaderHealthService); err == nil && st.String() == "SERVING" {
			for id, data := range blobs {
				if err := holds(b, id, data); err != nil {
					t.Fatalf("b leads without the code: %v", err)
				}
			}
		}
		if _, l, err := c.AgreedLeader(survivors); err != nil || l != cc {
			return fmt.Errorf("leader %v, %v", l, err)
		}
		for id, data := range blobs {
			if err := holds(b, id, data); err != nil {
				return err
			}
		}
		return nil
	})
	c.WaitQueued(t, 2, 10*time.Second)
}

func TestBadSubmissionsChangeNothing(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.max.artifact.bytes", "1048576"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	cl := newClient(t, c, leader)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	good := randomBytes(t, 1000)
	submit(t, cl, "taken", good)

	withSpec := func(f func(*nimbusv1.TopologySpec)) *nimbusv1.TopologySpec {
		s := testSpec("bad")
		f(s)
		return s
	}
	for _, tc := range []struct {
		what  string
		spec  *nimbusv1.TopologySpec
		data  []byte
		trail []byte // a wrong trailer when set
		code  codes.Code
		field string
	}{
		{"name with ../", withSpec(func(s *nimbusv1.TopologySpec) { s.Name = "../etc" }), good, nil, codes.InvalidArgument, "spec.name"},
		{"empty name", withSpec(func(s *nimbusv1.TopologySpec) { s.Name = "" }), good, nil, codes.InvalidArgument, "spec.name"},
		{"zero workers", withSpec(func(s *nimbusv1.TopologySpec) { s.NumWorkers = 0 }), good, nil, codes.InvalidArgument, "spec.num_workers"},
		{"negative parallelism", withSpec(func(s *nimbusv1.TopologySpec) { s.Components[0].Parallelism = -1 }), good, nil, codes.InvalidArgument, "spec.components[0].parallelism"},
		{"oversize artifact", testSpec("big"), randomBytes(t, 2<<20), nil, codes.InvalidArgument, "artifact"},
		{"checksum mismatch", testSpec("sum"), good, make([]byte, 32), codes.InvalidArgument, "trailer.sha256"},
		{"duplicate name", testSpec("taken"), good, nil, codes.AlreadyExists, ""},
	} {
		err := rawSubmit(t, c, leader, tc.spec, tc.data, tc.trail, false)
		if status.Code(err) != tc.code || (tc.field != "" && !strings.Contains(status.Convert(err).Message(), tc.field+":")) {
			t.Errorf("%s: %v, want %v naming %s", tc.what, err, tc.code, tc.field)
		}
	}
	// A stream cut in the middle of the upload.
	if err := rawSubmit(t, c, leader, testSpec("cut"), randomBytes(t, 512<<10), nil, true); status.Code(err) != codes.Canceled {
		t.Errorf("cut upload: %v, want Canceled", err)
	}

	// Nothing but the good topology, in ZooKeeper and on disk.
	testcluster.WaitFor(t, 5*time.Second, "no trace of the bad submissions", func() error {
		storms := zkChildren(t, conn, "/storm/storms")
		dists := zkChildren(t, conn, "/storm/code-distributor")
		if len(storms) != 1 || len(dists) != 1 || !strings.HasPrefix(storms[0], "taken-") {
			return fmt.Errorf("storms %v, distributions %v", storms, dists)
		}
		for _, dir := range []string{"tmp", "code"} {
			entries, err := os.ReadDir(filepath.Join(leader.LocalDir, "nimbus", dir))
			if err != nil {
				return err
			}
			if want := map[string]int{"tmp": 0, "code": 1}[dir]; len(entries) != want {
				return fmt.Errorf("%d entries in nimbus/%s, want %d", len(entries), dir, want)
			}
		}
		return nil
	})
}

// rawSubmit sends a submission by hand, to send what the SDK never would:
// a wrong trailer, or a stream cut halfway (cut).
func rawSubmit(t *testing.T, c *testcluster.Cluster, p *testcluster.Process, spec *nimbusv1.TopologySpec, data, trailer []byte, cut bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stream, err := c.API(p).SubmitTopology(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: spec}}); err != nil {
		return err
	}
	for off := 0; off < len(data); off += 256 << 10 {
		chunk := data[off:min(off+256<<10, len(data))]
		if err := stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: chunk}}); err != nil {
			_, err = stream.CloseAndRecv()
			return err
		}
		if cut {
			cancel()
			_, err := stream.CloseAndRecv()
			return err
		}
	}
	if trailer == nil {
		sum := sha256.Sum256(data)
		trailer = sum[:]
	}
	if err := stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{Sha256: trailer}}}); err != nil {
		_, err = stream.CloseAndRecv()
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
}

// The leader loses leadership during a submit's replication wait: the
// submit is not committed, the SDK submits again to the new leader, and
// exactly one topology exists.
func TestLeadershipLostDuringReplicationWait(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(8*time.Second))
	ps := c.StartNimbuses(t, 3, testcluster.WithArgs("--topology.min.replication.count", "3", "--topology.max.replication.wait.time.sec", "-1"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	paused := testcluster.Without(ps, leader)[1]
	// One nimbus paused: the minimum of 3 cannot be reached, so the
	// submit waits.
	if err := paused.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, c, ps...)
	data := randomBytes(t, 64<<10)
	type result struct {
		resp *nimbusv1.SubmitTopologyResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := cl.SubmitTopology(context.Background(), testSpec("survivor"), bytes.NewReader(data), int64(len(data)), nil)
		done <- result{resp, err}
	}()
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	testcluster.WaitFor(t, 10*time.Second, "the submission waiting for replication", func() error {
		if d, _, err := conn.Children("/storm/code-distributor"); err != nil || len(d) != 1 {
			return fmt.Errorf("distributions %v, %v", d, err)
		}
		return nil
	})
	// Take leadership away: delete the leader's lock node by hand.
	locks, _, err := conn.Children("/storm/leader-lock")
	if err != nil {
		t.Fatal(err)
	}
	head := cluster.LockOrder(locks)[0].Name
	if err := conn.Delete("/storm/leader-lock/"+head, -1); err != nil {
		t.Fatal(err)
	}
	if err := paused.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("submit did not finish")
	}
	if r.err != nil {
		t.Fatalf("submit across the leader change: %v", r.err)
	}
	testcluster.WaitFor(t, 10*time.Second, "exactly one topology and one distribution", func() error {
		storms, _, err := conn.Children("/storm/storms")
		if err != nil {
			return err
		}
		dists, _, err := conn.Children("/storm/code-distributor")
		if err != nil {
			return err
		}
		if len(storms) != 1 || storms[0] != r.resp.GetTopologyId() || len(dists) != 1 {
			return fmt.Errorf("storms %v, distributions %v, acknowledged %s", storms, dists, r.resp.GetTopologyId())
		}
		return nil
	})
}

// A nimbus whose copy was altered on disk is found out when it serves it:
// it stops counting as a replica, fetches the code again, and serves it
// intact afterwards. (Downloaders verifying and moving to another replica
// are in codedistributor's conformance suite.)
func TestAlteredReplicaIsDetectedAndResynced(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--topology.min.replication.count", "2", "--nimbus.code.sync.freq.secs", "600"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	victim := testcluster.Without(ps, leader)[0]
	cl := newClient(t, c, ps...)
	data := randomBytes(t, 256<<10)
	id := submit(t, cl, "altered", data).GetTopologyId()

	path := filepath.Join(victim.LocalDir, "nimbus", "code", id, "artifact")
	altered := append([]byte(nil), data...)
	altered[1000] ^= 0xff
	if err := os.WriteFile(path, altered, 0o755); err != nil {
		t.Fatal(err)
	}
	// Serving it reveals the damage (the stream ends in DataLoss), unless
	// its own re-verification found it first (it no longer has it).
	err := download(t, c, victim, id)
	if code := status.Code(err); code != codes.DataLoss && code != codes.NotFound {
		t.Fatalf("download of the altered copy: %v, want DataLoss or NotFound", err)
	}
	testcluster.WaitFor(t, 15*time.Second, "the victim re-synced", func() error {
		if err := holds(victim, id, data); err != nil {
			return err
		}
		return download(t, c, victim, id)
	})
}

func download(t *testing.T, c *testcluster.Cluster, p *testcluster.Process, id string) error {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	stream, err := nimbusv1.NewCodeServiceClient(c.Conn(p.Addr())).DownloadCode(ctx, &nimbusv1.DownloadCodeRequest{TopologyId: id, File: "artifact"})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// The only nimbus holding a topology dies: the survivor may not lead,
// says which topology blocks it, and the cluster recovers when the holder
// comes back with its disk.
func TestLeadershipBlockedIsVisibleAndRecoverable(t *testing.T) {
	data := randomBytes(t, 64<<10)
	c, a, b, id := orphanTopology(t, "precious", data)

	testcluster.WaitFor(t, 20*time.Second, "b reporting the block", func() error {
		cs := clusterSummary(t, c, b)
		if !slices.Equal(cs.GetLeadershipBlockedBy(), []string{id}) {
			return fmt.Errorf("blocked by %v", cs.GetLeadershipBlockedBy())
		}
		for _, n := range cs.GetNimbuses() {
			if n.GetIsLeader() {
				return fmt.Errorf("%s:%d is listed as leader", n.GetHost(), n.GetPort())
			}
			if n.GetHoldsAllCode() || !slices.Equal(n.GetMissingTopologyIds(), []string{id}) {
				return fmt.Errorf("nimbus %s:%d: holds all %v, missing %v", n.GetHost(), n.GetPort(), n.GetHoldsAllCode(), n.GetMissingTopologyIds())
			}
		}
		return nil
	})
	if st, err := c.Health(b, nimbusv1.LeaderHealthService); err != nil || st.String() == "SERVING" {
		t.Fatalf("b acts as leader without the code: %v %v", st, err)
	}

	// The way out: the holder returns with its disk.
	back, err := c.StartNimbus(testcluster.WithLocalDir(a.LocalDir))
	if err != nil {
		t.Fatal(err)
	}
	_, leader := c.WaitLeader(t, []*testcluster.Process{back, b}, 20*time.Second)
	if leader != back {
		t.Fatalf("%s leads, want the nimbus that holds the code", leader.Name)
	}
	testcluster.WaitFor(t, 10*time.Second, "b fetched the code", func() error { return holds(b, id, data) })
}

// An activate right after a kill must not undo it, however fresh the
// caches are.
func TestActivateRightAfterKillDoesNotUndoIt(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1)
	c.WaitLeader(t, ps, 10*time.Second)
	cl := newClient(t, c, ps...)
	submit(t, cl, "doomed", randomBytes(t, 1000))
	wait := int32(1)
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "doomed", WaitSecs: &wait}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ActivateTopology(t.Context(), "doomed"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("activate of a killed topology: %v, want FailedPrecondition", err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the killed topology removed", func() error {
		if n := len(clusterSummary(t, c, ps[0]).GetTopologies()); n != 0 {
			return fmt.Errorf("%d topologies", n)
		}
		return nil
	})
}
