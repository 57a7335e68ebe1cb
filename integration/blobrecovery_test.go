package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// Every nimbus loses its blob copies behind its back: a blob a supervisor
// placed is recovered from that supervisor, verified; one no supervisor
// holds is reported LOST. Neither touches leadership: the leader leads on
// and takes a submission.
func TestBlobsRecoveredFromSupervisorsOrLost(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	epoch, leader := c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1)
	cl := newClient(t, c, ps...)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	two := int32(2)
	model, orphan := []byte("the model, version 1\n"), []byte("nobody runs this\n")
	for key, content := range map[string][]byte{"model": model, "orphan": orphan} {
		if _, err := cl.CreateBlob(ctx, key, bytes.NewReader(content), client.BlobOptions{Size: int64(len(content)), ReplicationFactor: &two}); err != nil {
			t.Fatal(err)
		}
	}
	spec := &nimbusv1.TopologySpec{Name: "modeluser", NumWorkers: 1, WorkerCommand: []string{"{code_dir}/artifact"},
		Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		Config:     map[string]string{"topology.blobstore.map": `{"model": {"localname": "model.bin"}}`}}
	artifact := []byte("#!/bin/sh\nexec sleep 100000\n")
	if _, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "the worker's blob placed", func() error {
		files, _ := filepath.Glob(filepath.Join(sups[0].LocalDir, "supervisor", "workers", "*", workerproto.BlobsFileName))
		if len(files) != 1 {
			return fmt.Errorf("%d blobs files", len(files))
		}
		got, err := os.ReadFile(filepath.Join(filepath.Dir(files[0]), "model.bin"))
		if err != nil || !bytes.Equal(got, model) {
			return fmt.Errorf("model.bin: %q, %v", got, err)
		}
		return nil
	})

	// Every nimbus's blob copies go at once.
	for _, p := range ps {
		dir := filepath.Join(p.LocalDir, "nimbus", "blobs", "code")
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 2 {
			t.Fatalf("%s holds %d blobs (%v), want 2", p.Name, len(entries), err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	testcluster.WaitFor(t, 30*time.Second, "model recovered by both nimbuses, orphan LOST", func() error {
		list, err := cl.ListBlobs(ctx)
		if err != nil {
			return err
		}
		states := map[string]string{}
		for _, b := range list.GetBlobs() {
			states[b.GetKey()] = fmt.Sprintf("%s %d", b.GetState(), b.GetReplicationCount())
		}
		if states["model"] != blobstore.StateOK+" 2" || states["orphan"] != blobstore.StateLost+" 0" {
			return fmt.Errorf("states %v", states)
		}
		return nil
	})
	t.Logf("model recovered from the supervisor by both nimbuses %v after the wipe", time.Since(start).Round(time.Millisecond))
	var got bytes.Buffer
	if _, err := cl.ReadBlob(ctx, "model", &got); err != nil || !bytes.Equal(got.Bytes(), model) {
		t.Fatalf("the recovered model reads %q, %v", got.Bytes(), err)
	}
	// The first to notice recovers it from the supervisor; the other may
	// then fetch it from that nimbus.
	recovered := false
	for _, p := range ps {
		recovered = recovered || strings.Contains(logText(t, p), `"from":"supervisor `+sups[0].ID())
	}
	if !recovered {
		t.Fatal("no nimbus logs that it fetched model from the supervisor")
	}

	// Leadership never moved, and the leader takes writes.
	if e, now := c.WaitLeader(t, ps, 5*time.Second); e != epoch || now != leader {
		t.Fatalf("leader %s at epoch %d, was %s at %d", now.Name, e, leader.Name, epoch)
	}
	spec.Name, spec.Config = "plain", nil
	if _, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil); err != nil {
		t.Fatalf("a submission with a LOST blob in the cluster: %v", err)
	}
	// A read of the LOST blob waits for a copy, then says none is here.
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if _, err := cl.ReadBlob(short, "orphan", &bytes.Buffer{}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("reading a LOST blob: %v", err)
	}
}
