package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	pathpkg "path"
	"syscall"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// With storm.codedistributor.class hdfs: a new leader and the supervisors
// get the code from HDFS; a NameNode outage fails a submit cleanly and
// loses nothing already submitted.
func TestHDFSDistributor(t *testing.T) {
	h := testcluster.StartHDFS(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	env := []string{
		"STORM_CODEDISTRIBUTOR_CLASS=hdfs",
		"STORM_HDFS_NAMENODE_ADDRESSES=" + h.Addr(),
		"STORM_HDFS_USER=nimbus",
		"STORM_HDFS_STORM_DIR=/storm/topologies",
	}
	var ps []*testcluster.Process
	for range 3 {
		p, err := c.StartNimbus(testcluster.WithEnv(env...), testcluster.WithArgs("--nimbus.monitor.freq.secs", "1", "--nimbus.code.sync.freq.secs", "2"))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	var sups []*testcluster.Process
	for range 2 {
		p, err := c.StartSupervisor(testcluster.WithEnv(env...))
		if err != nil {
			t.Fatal(err)
		}
		sups = append(sups, p)
	}
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())

	data := randomBytes(t, 2<<20)
	first := submit(t, cl, "in-hdfs", data).GetTopologyId()
	info, err := cl.GetTopologyInfo(t.Context(), "in-hdfs")
	if err != nil {
		t.Fatal(err)
	}
	if info.GetStorage()["artifact.replication"] != "1" || info.GetStorage()["artifact.path"] == "" {
		t.Fatalf("storage details: %v", info.GetStorage())
	}
	worker := submitExample(t, cl, "hdfs-workers", 2)
	waitWorkers(t, conn, worker, 2, 30*time.Second, sups...) // from code fetched from HDFS

	// The leader dies: the next one leads with the code it pulled from HDFS.
	if err := leader.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	rest := testcluster.Without(ps, leader)
	_, newLeader := c.WaitLeader(t, rest, 20*time.Second)
	if err := holds(newLeader, first, data); err != nil {
		t.Fatal(err)
	}

	// NameNode down: a submit fails with a clear error and leaves nothing.
	h.StopNameNode()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err = cl.SubmitTopology(ctx, testSpec("during-outage"), bytes.NewReader(data[:1000]), 1000, nil)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("submit with the NameNode down: %v, want Unavailable", err)
	}
	t.Logf("submit with the NameNode down: %v", err)
	if d := zkChildren(t, conn, "/storm/code-distributor"); len(d) != 2 {
		t.Fatalf("distributions %v, want the 2 submitted topologies only", d)
	}
	// Topologies keep running and nothing is lost while it is down.
	if w, err := runningWorkers(t, conn, worker, sups...); err != nil || len(w) != 2 {
		t.Fatalf("workers during the NameNode outage: %v, %v", w, err)
	}
	h.StartNameNode()

	// A nimbus joining afterwards syncs from HDFS again.
	joiner, err := c.StartNimbus(testcluster.WithEnv(env...))
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "a new nimbus synced from HDFS", func() error { return holds(joiner, first, data) })
	submit(t, cl, "after-outage", data[:5000])

	path := info.GetStorage()["artifact.path"]
	hc, err := gohdfs.NewClient(gohdfs.ClientOptions{Addresses: []string{h.Addr()}, User: testcluster.HDFSUser})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	// What a failed upload leaves behind (nothing in ZooKeeper refers to
	// it) is swept by the leader.
	orphan := "/storm/topologies/orphan-7-1700000000"
	if err := hc.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hc.CreateEmptyFile(orphan + "/artifact.uploading"); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the orphaned upload swept", func() error {
		if _, err := hc.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %v", orphan, err)
		}
		return nil
	})

	// Blobs live under blobstore.dir, apart from the code; a delete removes
	// them, and what a write left of a key no blob has is swept.
	one := int32(1)
	if _, err := cl.CreateBlob(t.Context(), "hdfs-blob", bytes.NewReader(data[:2000]), client.BlobOptions{Size: 2000, ReplicationFactor: &one}); err != nil {
		t.Fatal(err)
	}
	if _, err := hc.Stat(configs.DefaultBlobstoreDir + "/hdfs-blob"); err != nil {
		t.Fatalf("the blob is not in HDFS: %v", err)
	}
	if err := cl.DeleteBlob(t.Context(), "hdfs-blob"); err != nil {
		t.Fatal(err)
	}
	orphanBlob := configs.DefaultBlobstoreDir + "/orphan-blob/0123/blob.uploading"
	if err := hc.MkdirAll(pathpkg.Dir(orphanBlob), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hc.CreateEmptyFile(orphanBlob); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the deleted and the orphaned blob gone from HDFS", func() error {
		for _, p := range []string{configs.DefaultBlobstoreDir + "/hdfs-blob", configs.DefaultBlobstoreDir + "/orphan-blob"} {
			if _, err := hc.Stat(p); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: %v", p, err)
			}
		}
		return nil
	})

	// A kill removes the code from HDFS too.
	if _, err := hc.Stat(path); err != nil {
		t.Fatalf("%s not in HDFS before the kill: %v", path, err)
	}
	zero := int32(0)
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "in-hdfs", WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the killed topology's HDFS directory removed", func() error {
		if _, err := hc.Stat(path); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %v", path, err)
		}
		return nil
	})
}
