package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Reads go to any nimbus; the client moves past the ones that are down.
func Example() {
	c, err := client.New([]string{"nimbus-1:6627", "nimbus-2:6627", "nimbus-3:6627"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.GetClusterInfo(ctx)
	if errors.Is(err, client.ErrNoSeedAnswered) {
		log.Fatalf("cluster unreachable: %v", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range resp.GetCluster().GetNimbuses() {
		fmt.Printf("%s:%d leader=%t\n", n.GetHost(), n.GetPort(), n.GetIsLeader())
	}
}

// Leader-only calls find the leader themselves and retry while a new one
// is elected, within the retry budget.
func ExampleClient_KillTopology() {
	c, err := client.New([]string{"nimbus-1:6627"}, client.WithRetry(0, time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	wait := int32(10)
	err = c.KillTopology(context.Background(), &nimbusv1.KillTopologyRequest{Name: "wordcount", WaitSecs: &wait})
	switch {
	case err == nil:
		fmt.Println("killed")
	case errors.Is(err, client.ErrNoLeader):
		fmt.Println("no leader within a minute:", err)
	case status.Code(err) == codes.NotFound:
		fmt.Println("no such topology")
	default:
		log.Fatal(err)
	}
}

// SubmitTopology streams an artifact from a file; a file can be re-read,
// so the submission can follow a redirect to the leader.
func ExampleClient_SubmitTopology() {
	c, err := client.New([]string{"nimbus-1:6627", "nimbus-2:6627"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	f, err := os.Open("wordcount.tar.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}

	spec := &nimbusv1.TopologySpec{
		Name:          "wordcount",
		NumWorkers:    2,
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentences", Parallelism: 2}, {Id: "count", Parallelism: 4}},
		WorkerCommand: []string{"{code_dir}/bin/worker", "--port", "{port}"},
	}
	resp, err := c.SubmitTopology(context.Background(), spec, f, info.Size(), func(sent, total int64) {
		fmt.Fprintf(os.Stderr, "\ruploaded %d/%d bytes", sent, total)
	})
	if status.Code(err) == codes.AlreadyExists {
		log.Fatal("a topology named wordcount is running")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("submitted %s, code on %d nimbuses\n", resp.GetTopologyId(), resp.GetReplicationCount())
}

// CreateBlob streams a file into the blobstore; topologies name the key in
// topology.blobstore.map. A file can be re-read, so the upload can follow
// a redirect to the leader.
func ExampleClient_CreateBlob() {
	c, err := client.New([]string{"nimbus-1:6627", "nimbus-2:6627"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	f, err := os.Open("dictionary.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	factor := int32(3)
	resp, err := c.CreateBlob(context.Background(), "dictionary", f, client.BlobOptions{
		ACL:               []string{"u:alice:rwa", "o::r--"}, // Storm's syntax
		ReplicationFactor: &factor,
		Size:              -1, // read to the end
	})
	if status.Code(err) == codes.AlreadyExists {
		log.Fatal("a blob named dictionary exists: UpdateBlob stores a new version")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d on %d nimbuses\n", resp.GetBlob().GetVersion(), resp.GetBlob().GetReplicationCount())
}

// ReadBlob writes a blob's current version and checks it against its
// SHA-256; on any error what was written is not the blob.
func ExampleClient_ReadBlob() {
	c, err := client.New([]string{"nimbus-1:6627"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var content bytes.Buffer
	info, err := c.ReadBlob(context.Background(), "dictionary", &content)
	if errors.Is(err, client.ErrBlobMismatch) {
		log.Fatal("the content received is not the blob's: read it again")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s version %d: %d bytes\n", info.GetKey(), info.GetVersion(), content.Len())
}

// The blob's ACL and replication factor are changed by its admins (its
// owner, an "a" in its ACL, or nimbus.admins).
func ExampleClient_SetBlobACL() {
	c, err := client.New([]string{"nimbus-1:6627"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	if _, err := c.SetBlobACL(ctx, "dictionary", []string{"u:alice:rwa", "u:bob:r--"}); err != nil {
		log.Fatal(err)
	}
	info, err := c.SetBlobReplication(ctx, "dictionary", 5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d/%d replicas, %s\n", info.GetKey(), info.GetReplicationCount(), info.GetReplicationFactor(), info.GetState())
}
