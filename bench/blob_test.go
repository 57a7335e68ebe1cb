package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

var blobTrials = flag.Int("blob-trials", 3, "100 MiB blob creates and updates per code distributor backend")

const (
	blobSize        = 100 << 20 // 100 MiB of random bytes
	blobNimbuses    = 3
	blobSupervisors = 10
)

// BenchmarkBlob measures blobs (docs/ARCHITECTURE.md section 24) with
// localfs and bittorrent: a 100 MiB blob created with replication 3 (the
// time to the acknowledgement, which comes once three nimbuses hold it),
// then used by a topology of 10 workers on 10 supervisors, then updated:
// the time from the update's acknowledgement until the last worker is told
// (its blobs file lists the new version, written after the link switched),
// and the bytes the leader sent for the create and the update
// (nimbus_code_sent_bytes_total, every transport), in blob sizes.
func BenchmarkBlob(b *testing.B) {
	z := testcluster.StartZooKeeper(b)
	var rows []string
	for _, backend := range []string{"localfs", "bittorrent"} {
		b.Run(backend, func(b *testing.B) { rows = append(rows, benchBlob(b, z.Addr(), backend)) })
	}
	fmt.Fprintf(os.Stderr, "\n| backend | trials | create ack (replication 3) p50 | max | update ack p50 | max | ack to every supervisor holding it p50 | max | ack to last worker told p50 | max | update call to last worker told p50 | max | leader sent for the create p50 | max | for the update p50 | max |\n")
	for _, r := range rows {
		fmt.Fprintln(os.Stderr, r)
	}
}

// blobTrial is what one trial measured.
type blobTrial struct {
	createAck, updateAck, told time.Duration
	fetched                    time.Duration // from the update's ack until every supervisor's blob store holds it
	// What the leader sent (in blob sizes) for the create (to the other
	// nimbuses) and for the update (to them and to the 10 supervisors).
	sentCreate, sentUpdate float64
}

func benchBlob(b *testing.B, zkAddr, backend string) string {
	common := backendArgs(backend)
	c := testcluster.New(b, zkAddr, testcluster.WithRoot("/bench-blob-"+backend),
		testcluster.WithSessionTimeout(20*time.Second), testcluster.WithLogf(discard))
	var nimbuses []*testcluster.Process
	for range blobNimbuses {
		p, err := c.StartNimbus(testcluster.WithArgs("--nimbus.blobstore.max.blob.bytes", strconv.Itoa(2*blobSize),
			"--topology.max.replication.wait.time.sec", "120"), testcluster.WithArgs(common...))
		if err != nil {
			b.Fatal(err)
		}
		nimbuses = append(nimbuses, p)
	}
	var sups []*testcluster.Process
	for _, port := range testcluster.FreePorts(b, blobSupervisors) {
		p, err := c.StartSupervisor(testcluster.WithSlots(port), testcluster.WithArgs(common...))
		if err != nil {
			b.Fatal(err)
		}
		sups = append(sups, p)
	}
	cl, err := client.New(testcluster.Addrs(nimbuses...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	leader := awaitLeaderSeeing(b, c, nimbuses, blobSupervisors)

	data := make([]byte, blobSize)
	rand.Read(data)
	var trials []blobTrial
	for i := range *blobTrials {
		tr, err := blobOnce(c, cl, leader, sups, fmt.Sprintf("bench-%s-%d", backend, i), data)
		if err != nil {
			b.Fatalf("trial %d: %v\n%s", i, err, c.Logs(30))
		}
		fmt.Fprintf(os.Stderr, "%s trial %d: create ack %v, update ack %v, ack to every supervisor holding it %v, to last worker told %v, leader sent %.2fx for the create, %.2fx for the update\n",
			backend, i, tr.createAck.Round(time.Millisecond), tr.updateAck.Round(time.Millisecond), tr.fetched.Round(time.Millisecond), tr.told.Round(time.Millisecond), tr.sentCreate, tr.sentUpdate)
		trials = append(trials, tr)
	}
	var creates, updates, fetched, told, whole []time.Duration
	var sentCreate, sentUpdate []float64
	for _, tr := range trials {
		creates, updates, fetched, told = append(creates, tr.createAck), append(updates, tr.updateAck), append(fetched, tr.fetched), append(told, tr.told)
		sentCreate, sentUpdate = append(sentCreate, tr.sentCreate), append(sentUpdate, tr.sentUpdate)
		whole = append(whole, tr.updateAck+tr.told)
	}
	b.ReportMetric(percentile(creates, 50).Seconds(), "create-ack-p50-s")
	b.ReportMetric(percentile(told, 50).Seconds(), "told-p50-s")
	b.ReportMetric(percentileF(sentUpdate, 50), "leader-update-x-p50")
	return fmt.Sprintf("| %s | %d | %v | %v | %v | %v | %v | %v | %v | %v | %v | %v | %.2fx | %.2fx | %.2fx | %.2fx |", backend, len(trials),
		percentile(creates, 50).Round(time.Millisecond), maxOf(creates).Round(time.Millisecond),
		percentile(updates, 50).Round(time.Millisecond), maxOf(updates).Round(time.Millisecond),
		percentile(fetched, 50).Round(time.Millisecond), maxOf(fetched).Round(time.Millisecond),
		percentile(told, 50).Round(time.Millisecond), maxOf(told).Round(time.Millisecond),
		percentile(whole, 50).Round(time.Millisecond), maxOf(whole).Round(time.Millisecond),
		percentileF(sentCreate, 50), percentileF(sentCreate, 100), percentileF(sentUpdate, 50), percentileF(sentUpdate, 100))
}

// blobOnce creates key, runs a topology of one worker per supervisor that
// uses it, updates it, and times each step; then removes both.
func blobOnce(c *testcluster.Cluster, cl *client.Client, leader *testcluster.Process, sups []*testcluster.Process, key string, data []byte) (blobTrial, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var tr blobTrial
	before, err := leaderSent(leader)
	if err != nil {
		return tr, err
	}
	three := int32(3)
	start := time.Now()
	resp, err := cl.CreateBlob(ctx, key, bytes.NewReader(data), client.BlobOptions{Size: int64(len(data)), ReplicationFactor: &three})
	if err != nil {
		return tr, err
	}
	tr.createAck = time.Since(start)
	if n := resp.GetBlob().GetReplicationCount(); n < 3 || resp.GetReplicationWaitTimedOut() {
		return tr, fmt.Errorf("create answered with %d replicas", n)
	}
	sent, err := leaderSent(leader)
	if err != nil {
		return tr, err
	}
	tr.sentCreate = (sent - before) / float64(len(data))

	name := "user-" + key
	spec := &nimbusv1.TopologySpec{Name: name, NumWorkers: int32(len(sups)), WorkerCommand: []string{"{code_dir}/artifact"},
		Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: int32(len(sups))}},
		Config:     map[string]string{"topology.blobstore.map": fmt.Sprintf(`{%q: {"localname": "data"}}`, key)}}
	artifact := []byte("#!/bin/sh\nexec sleep 100000\n")
	if _, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		return tr, err
	}
	if err := awaitTold(sups, 1, 5*time.Minute); err != nil {
		return tr, fmt.Errorf("placing version 1: %w", err)
	}

	data[0]++ // another version
	if before, err = leaderSent(leader); err != nil {
		return tr, err
	}
	start = time.Now()
	if _, err := cl.UpdateBlob(ctx, key, bytes.NewReader(data), client.BlobOptions{Size: int64(len(data))}); err != nil {
		return tr, err
	}
	tr.updateAck = time.Since(start)
	acked := time.Now()
	fetched := make(chan time.Duration, 1)
	go func() { fetched <- awaitFetched(sups, key, data, acked) }()
	if err := awaitTold(sups, 2, 5*time.Minute); err != nil {
		return tr, fmt.Errorf("placing version 2: %w", err)
	}
	tr.told = time.Since(acked)
	tr.fetched = <-fetched
	after, err := leaderSent(leader)
	if err != nil {
		return tr, err
	}
	tr.sentUpdate = (after - before) / float64(len(data))

	zero := int32(0)
	if err := cl.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: &zero}); err != nil {
		return tr, err
	}
	return tr, testcluster.Poll(2*time.Minute, func() error { return cl.DeleteBlob(ctx, key) })
}

// awaitTold polls every supervisor's worker directories until each lists
// version in its blobs file: the supervisor writes it after the switch.
func awaitTold(sups []*testcluster.Process, version int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond) // the measurement's resolution
	defer tick.Stop()
	for ; ; <-tick.C {
		told, why := 0, ""
		for _, s := range sups {
			files, _ := filepath.Glob(filepath.Join(s.LocalDir, "supervisor", "workers", "*", workerproto.BlobsFileName))
			for _, f := range files {
				blobs, err := workerproto.ReadBlobs(f)
				if err == nil && len(blobs) == 1 && blobs[0].Version == version {
					told++
					break
				}
				why = fmt.Sprintf("%s: %v %v", s.Name, blobs, err)
			}
		}
		if told == len(sups) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workers told version %d (%s)", told, len(sups), version, why)
		}
	}
}

// awaitFetched is when, after since, every supervisor's blob store first
// holds the version whose content is data: the transfer's part of the
// time until the workers are told. It gives up after 5 minutes.
func awaitFetched(sups []*testcluster.Process, key string, data []byte, since time.Time) time.Duration {
	want := sha256.Sum256(data)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for ; time.Since(since) < 5*time.Minute; <-tick.C {
		held := 0
		for _, s := range sups {
			raw, err := os.ReadFile(filepath.Join(s.LocalDir, "supervisor", "blobs", "code", key, "meta.pb"))
			meta := new(clusterv1.CodeMeta)
			if err == nil && proto.Unmarshal(raw, meta) == nil && len(meta.GetFiles()) == 1 && bytes.Equal(meta.GetFiles()[0].GetSha256(), want[:]) {
				held++
			}
		}
		if held == len(sups) {
			return time.Since(since)
		}
	}
	return 0
}

// leaderSent is what the leader sent to other nodes, every transport.
func leaderSent(p *testcluster.Process) (float64, error) {
	grpc, bt, err := sentBytes(p)
	return grpc + bt, err
}
