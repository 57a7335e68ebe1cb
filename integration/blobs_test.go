package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// tarGz is a .tar.gz of one file, data.txt, holding content.
func tarGz(t *testing.T, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "data.txt", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func putBlob(t *testing.T, cl *client.Client, key string, content []byte, create bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	one := int32(1)
	var err error
	if create {
		_, err = cl.CreateBlob(ctx, key, bytes.NewReader(content), client.BlobOptions{ReplicationFactor: &one, Size: int64(len(content))})
	} else {
		_, err = cl.UpdateBlob(ctx, key, bytes.NewReader(content), client.BlobOptions{Size: int64(len(content))})
	}
	if err != nil {
		t.Fatalf("blob %s: %v", key, err)
	}
}

// waitBlobReply waits until the blob worker on port answers with want in
// its line, and returns the line.
func waitBlobReply(t *testing.T, port int32, want string) string {
	t.Helper()
	var line string
	testcluster.WaitFor(t, 30*time.Second, "the blob worker reading "+want, func() error {
		var err error
		if line, err = askWorker(port); err != nil {
			return err
		}
		if !strings.Contains(line, want) {
			return fmt.Errorf("it says %q", strings.TrimSpace(line))
		}
		return nil
	})
	return line
}

// TestBlobsReachWorkers: a topology with two blobs, one a .tar.gz it
// unpacks, starts with both in place; an update of the first reaches the
// running worker (the same process) through the worker library, and a
// reader of its link meanwhile reads one whole version or the other; an
// update of the second, with workerRestart, restarts the worker with the
// new version in place, also after a supervisor restart that adopted the
// worker and its blobs without restarting it.
func TestBlobsReachWorkers(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(10*time.Second))
	ps := c.StartNimbuses(t, 1)
	c.WaitLeader(t, ps, 10*time.Second)
	slots := testcluster.FreePorts(t, 1)
	sup, err := c.StartSupervisor(testcluster.WithSlots(slots...))
	if err != nil {
		t.Fatal(err)
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)

	first := strings.Repeat("first-words,", 20000) // 240 KB: a read takes a while
	putBlob(t, cl, "words", []byte(first), true)
	putBlob(t, cl, "dict.tar.gz", tarGz(t, "first-dict"), true)
	program, err := os.ReadFile(testcluster.Bin(t).Path("blobworker"))
	if err != nil {
		t.Fatal(err)
	}
	spec := &nimbusv1.TopologySpec{
		Name: "blobs", NumWorkers: 1,
		Components:    []*nimbusv1.ComponentSpec{{Id: "reader", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
		Config: map[string]string{"topology.blobstore.map": `{"words": {"localname": "words.txt"},
			"dict.tar.gz": {"localname": "dict", "uncompress": true, "workerRestart": true}}`},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, bytes.NewReader(program), int64(len(program)), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTopologyId()
	workers := waitWorkers(t, conn, id, 1, 30*time.Second, sup)
	var port, pid int32
	for port, pid = range workers {
	}
	waitBlobReply(t, port, "dict=1/first-dict words.txt=1/first-words,")

	// The update reaches the running worker; a reader of the link sees
	// whole versions only.
	link := filepath.Join(sup.LocalDir, "supervisor", "workers", fmt.Sprintf("%s-%d", id, port), "words.txt")
	second := strings.Repeat("second-words,", 20000)
	var stop atomic.Bool
	var reads, bad atomic.Int64
	var firstBad atomic.Value
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			b, err := os.ReadFile(link)
			reads.Add(1)
			if err != nil || (string(b) != first && string(b) != second) {
				bad.Add(1)
				firstBad.CompareAndSwap(nil, fmt.Sprintf("%d bytes, %v", len(b), err))
			}
		}
	})
	putBlob(t, cl, "words", []byte(second), false)
	waitBlobReply(t, port, "dict=1/first-dict words.txt=2/second-words,")
	stop.Store(true)
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d of %d reads of the link during the update saw neither version whole: first %v", bad.Load(), reads.Load(), firstBad.Load())
	}
	if now, err := runningWorkers(t, conn, id, sup); err != nil || now[port] != pid {
		t.Fatalf("the worker was restarted by an update without workerRestart: %v (was %d), %v", now, pid, err)
	}

	// A supervisor restarted adopts the worker with its blobs as they are:
	// nothing restarts, and the next update still reaches it.
	if err := sup.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if sup, err = c.StartSupervisor(testcluster.WithLocalDir(sup.LocalDir), testcluster.WithSlots(slots...)); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "the restarted supervisor adopting the worker", func() error {
		if now, err := runningWorkers(t, conn, id, sup); err != nil || now[port] != pid {
			return fmt.Errorf("workers %v, want pid %d (%v)", now, pid, err)
		}
		return nil
	})
	if b, err := os.ReadFile(link); err != nil || string(b) != second {
		t.Fatalf("after the adoption the link reads %d bytes, %v", len(b), err)
	}

	// workerRestart: a new process, the new version in place.
	putBlob(t, cl, "dict.tar.gz", tarGz(t, "second-dict"), false)
	testcluster.WaitFor(t, 30*time.Second, "the worker restarted", func() error {
		now, err := runningWorkers(t, conn, id, sup)
		if err != nil || now[port] == pid || now[port] == 0 {
			return fmt.Errorf("workers %v (was %d), %v", now, pid, err)
		}
		return nil
	})
	waitBlobReply(t, port, "updates=1 dict=2/second-dict words.txt=2/second-words,")
}
