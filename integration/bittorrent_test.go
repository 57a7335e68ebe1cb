package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// bittorrentArgs select the BitTorrent code distributor; every process
// shares this machine, so each listens on a free port of its own.
var bittorrentArgs = []string{"--storm.codedistributor.class", "bittorrent", "--bittorrent.port", "0"}

// With storm.codedistributor.class bittorrent: the leader dies while the
// supervisors are fetching a big artifact; they finish it from the other
// nimbuses and from each other, run their workers from it, and stay in the
// swarm as seeds.
func TestBitTorrentDistributionSurvivesLeaderCrash(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 3, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1",
		"--topology.min.replication.count", "2"), testcluster.WithArgs(bittorrentArgs...))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	// One slot each: five workers put one on every supervisor.
	const nSups = 5
	var sups []*testcluster.Process
	for _, port := range testcluster.FreePorts(t, nSups) {
		p, err := c.StartSupervisor(testcluster.WithSlots(port), testcluster.WithArgs(bittorrentArgs...))
		if err != nil {
			t.Fatal(err)
		}
		sups = append(sups, p)
	}
	peerOf := map[string]*testcluster.Process{} // torrent address: process
	for _, p := range append(slices.Clone(ps), sups...) {
		peerOf[p.TorrentAddr()] = p
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)

	// A big artifact that is the worker program: the example, padded.
	// A supervisor runs it only once it holds the verified code, and only
	// if no file of it is left open for writing.
	program, err := os.ReadFile(testcluster.Bin(t).Path("wordcount"))
	if err != nil {
		t.Fatal(err)
	}
	data := append(program, randomBytes(t, 24<<20-len(program))...)
	spec := &nimbusv1.TopologySpec{
		Name: "swarmed", NumWorkers: nSups, Owner: "tester",
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentence", Parallelism: 1}, {Id: "split", Parallelism: 2}, {Id: "count", Parallelism: 3}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTopologyId()
	if resp.GetReplicationCount() < 2 || resp.GetReplicationWaitTimedOut() {
		t.Fatalf("submit: %v, want 2 replicas without timing out", resp)
	}
	t.Logf("submitted %d bytes as %s in %v", len(data), id, time.Since(start).Round(time.Millisecond))

	// The leader dies as soon as the first supervisor joins the swarm.
	testcluster.WaitFor(t, 30*time.Second, "a supervisor in the swarm of "+id, func() error {
		members, err := swarmMembers(conn, id)
		for _, m := range members {
			if p := peerOf[m]; p != nil && slices.Contains(sups, p) {
				return nil
			}
		}
		return fmt.Errorf("members %v (%v)", members, err)
	})
	if err := leader.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, s := range sups {
		if supervisorHolds(s, id, data) == nil {
			done = append(done, s.Name)
		}
	}
	t.Logf("%s killed %v after the submit; supervisors holding the code by then: %v",
		leader.Name, time.Since(start).Round(time.Millisecond), done)

	_, newLeader := c.WaitLeader(t, testcluster.Without(ps, leader), 30*time.Second)
	if err := holds(newLeader, id, data); err != nil {
		t.Fatal(err)
	}
	// With one slot each, five workers are one on every supervisor; each
	// started only from verified code.
	waitWorkers(t, conn, id, nSups, 90*time.Second, sups...)
	for _, s := range sups {
		if err := supervisorHolds(s, id, data); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("every supervisor runs its worker %v after the submit", time.Since(start).Round(time.Millisecond))
	if storms := zkChildren(t, conn, "/storm/storms"); !slices.Contains(storms, id) {
		t.Fatalf("/storm/storms is %v, want %s still there", storms, id)
	}

	// Everyone alive holds the code and seeds it; the dead leader's
	// membership went with its session.
	want := map[string]string{}
	for addr, p := range peerOf {
		if p != leader {
			want[addr] = p.Name
		}
	}
	testcluster.WaitFor(t, 20*time.Second, "the swarm to be the live nimbuses and every supervisor", func() error {
		members, err := swarmMembers(conn, id)
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, m := range members {
			got[m] = "unknown"
			if p := peerOf[m]; p != nil {
				got[m] = p.Name
			}
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("members %v, want %v", got, want)
		}
		return nil
	})
}

// swarmMembers lists the torrent addresses registered in a topology's
// swarm.
func swarmMembers(conn *zk.Conn, id string) ([]string, error) {
	members, _, err := conn.Children("/storm/bittorrent/" + id)
	return members, err
}

// supervisorHolds checks that supervisor p's store has the topology's
// artifact, intact.
func supervisorHolds(p *testcluster.Process, id string, data []byte) error {
	got, err := os.ReadFile(filepath.Join(p.LocalDir, "supervisor", "code", id, "artifact"))
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		return fmt.Errorf("%s holds a different artifact for %s", p.Name, id)
	}
	return nil
}
