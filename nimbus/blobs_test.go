package nimbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// rawBlobWrite creates (header with ACL and replication) or updates a blob
// over conn, content in 1 MiB chunks, trailer as given (nil: the right
// SHA-256).
func rawBlobWrite(ctx context.Context, conn *grpc.ClientConn, create bool, h *nimbusv1.BlobHeader, content []byte, trailer []byte) (*nimbusv1.BlobInfo, bool, error) {
	api := nimbusv1.NewNimbusServiceClient(conn)
	if trailer == nil {
		sum := sha256.Sum256(content)
		trailer = sum[:]
	}
	var chunks [][]byte
	for rest := content; len(rest) > 0; {
		n := min(len(rest), maxChunk)
		chunks, rest = append(chunks, rest[:n]), rest[n:]
	}
	if create {
		stream, err := api.CreateBlob(ctx)
		if err != nil {
			return nil, false, err
		}
		_ = stream.Send(&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Header{Header: h}})
		for _, c := range chunks {
			_ = stream.Send(&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Chunk{Chunk: c}})
		}
		_ = stream.Send(&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{Sha256: trailer}}})
		resp, err := stream.CloseAndRecv()
		return resp.GetBlob(), resp.GetReplicationWaitTimedOut(), err
	}
	stream, err := api.UpdateBlob(ctx)
	if err != nil {
		return nil, false, err
	}
	_ = stream.Send(&nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Header{Header: h}})
	for _, c := range chunks {
		_ = stream.Send(&nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Chunk{Chunk: c}})
	}
	_ = stream.Send(&nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{Sha256: trailer}}})
	resp, err := stream.CloseAndRecv()
	return resp.GetBlob(), resp.GetReplicationWaitTimedOut(), err
}

// rawBlobRead reads a blob's info and content over conn.
func rawBlobRead(ctx context.Context, conn *grpc.ClientConn, key string) (*nimbusv1.BlobInfo, []byte, error) {
	stream, err := nimbusv1.NewNimbusServiceClient(conn).ReadBlob(ctx, &nimbusv1.ReadBlobRequest{Key: key})
	if err != nil {
		return nil, nil, err
	}
	var info *nimbusv1.BlobInfo
	var content bytes.Buffer
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return info, content.Bytes(), nil
		}
		if err != nil {
			return nil, nil, err
		}
		if i := msg.GetInfo(); i != nil {
			info = i
		}
		content.Write(msg.GetChunk())
	}
}

// awaitHeldEverywhere waits until every nimbus holds key's version with
// content want, verified in its blob store.
func awaitHeldEverywhere(t *testing.T, servers []*Server, key string, want []byte) {
	t.Helper()
	sum := sha256.Sum256(want)
	testcluster.WaitFor(t, 20*time.Second, "every nimbus holds "+key, func() error {
		for _, s := range servers {
			_, meta, digest, err := s.blobStore.Meta(key)
			if err != nil {
				return fmt.Errorf("%s: %v", s.Addr(), err)
			}
			if !bytes.Equal(meta.GetFiles()[0].GetSha256(), sum[:]) {
				return fmt.Errorf("%s holds another version", s.Addr())
			}
			if err := s.blobStore.Verify(key, digest); err != nil {
				return fmt.Errorf("%s: %v", s.Addr(), err)
			}
		}
		return nil
	})
}

// A blob's life on three nimbuses: created with replication 3 (answered
// once the three hold it), read from the leader only, updated, listed,
// used by a topology (so not deletable), then deleted everywhere. Bad
// input is refused naming the field, and leaves the key free.
func TestInProcessBlobLifecycle(t *testing.T) {
	zk := testcluster.StartZooKeeper(t)
	var servers []*Server
	for range 3 {
		servers = append(servers, startServer(t, zk.Addr()))
	}
	leader := servers[0]
	testcluster.WaitFor(t, 20*time.Second, "a leader", func() error {
		for _, s := range servers {
			if s.election.Current() != nil {
				leader = s
				return nil
			}
		}
		return errors.New("none leads")
	})
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
		}
	}
	conn := dial(t, leader)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	three := int32(3)

	// Refused, naming the field; nothing written.
	_, _, err := rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "../etc"}, []byte("x"), nil)
	checkRefused(t, err, codes.InvalidArgument, "header.key")
	_, _, err = rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "dict", Acl: []string{"u:bob"}}, []byte("x"), nil)
	checkRefused(t, err, codes.InvalidArgument, "header.acl[0]")
	_, _, err = rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "dict"}, []byte("abc"), make([]byte, 32))
	checkRefused(t, err, codes.InvalidArgument, "trailer.sha256")
	_, _, err = rawBlobWrite(ctx, conn, false, &nimbusv1.BlobHeader{Key: "dict"}, []byte("abc"), nil)
	checkRefused(t, err, codes.NotFound, "dict")

	// Created: three nimbuses hold it when the answer comes.
	v1 := bytes.Repeat([]byte("dictionary v1\n"), 200_000) // 2.8 MB: three chunks
	info, timedOut, err := rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "dict", ReplicationFactor: &three}, v1, nil)
	if err != nil || timedOut {
		t.Fatalf("create: %v (timed out %v)", err, timedOut)
	}
	if info.GetVersion() != 1 || info.GetReplicationCount() != 3 || info.GetState() != blobstore.StateOK || info.GetSize() != int64(len(v1)) {
		t.Fatalf("create answered %v", info)
	}
	for _, s := range servers {
		if !s.blobSync.Holds("dict", mustBlobDigest(t, leader, "dict")) {
			t.Fatalf("%s does not hold dict when the create is answered", s.Addr())
		}
	}
	_, _, err = rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "dict"}, []byte("again"), nil)
	checkRefused(t, err, codes.AlreadyExists, "dict")

	// Read: the leader answers; a follower names the leader.
	got, content, err := rawBlobRead(ctx, conn, "dict")
	if err != nil || !bytes.Equal(content, v1) || got.GetVersion() != 1 {
		t.Fatalf("read: %v, %d bytes, version %d", err, len(content), got.GetVersion())
	}
	_, _, err = rawBlobRead(ctx, dial(t, follower), "dict")
	checkRefused(t, err, codes.FailedPrecondition)

	// Updated: every nimbus moves to version 2, and a read sees it.
	v2 := []byte("dictionary v2\n")
	info, _, err = rawBlobWrite(ctx, conn, false, &nimbusv1.BlobHeader{Key: "dict"}, v2, nil)
	if err != nil || info.GetVersion() != 2 || info.GetReplicationCount() != 3 {
		t.Fatalf("update: %v, %v", err, info)
	}
	awaitHeldEverywhere(t, servers, "dict", v2)
	if _, content, err = rawBlobRead(ctx, conn, "dict"); err != nil || !bytes.Equal(content, v2) {
		t.Fatalf("read after update: %v, %q", err, content)
	}

	// Listed by any nimbus, with the replication.
	list, err := nimbusv1.NewNimbusServiceClient(dial(t, follower)).ListBlobs(ctx, &nimbusv1.ListBlobsRequest{})
	if err != nil || len(list.GetBlobs()) != 1 || list.GetBlobs()[0].GetReplicationFactor() != 3 || list.GetBlobs()[0].GetVersion() != 2 {
		t.Fatalf("list: %v, %v", err, list)
	}
	_, err = nimbusv1.NewNimbusServiceClient(conn).ListBlobs(ctx, &nimbusv1.ListBlobsRequest{Keys: []string{"nope"}})
	checkRefused(t, err, codes.NotFound, "nope")

	// A topology that names a missing blob is refused; one naming dict
	// keeps dict from being deleted.
	cl := sdk(t, leader)
	spec := smallSpec("reader")
	spec.Config = map[string]string{validate.TopologyBlobstoreMap: `{"dict": {"localname": "words"}, "missing": {}}`}
	_, err = cl.SubmitTopology(ctx, spec, bytes.NewReader([]byte("#!/bin/sh\n")), 10, nil)
	checkRefused(t, err, codes.InvalidArgument, `"missing"`)
	spec.Config = map[string]string{validate.TopologyBlobstoreMap: `{"dict": {"localname": "words"}}`}
	resp, err := cl.SubmitTopology(ctx, spec, bytes.NewReader([]byte("#!/bin/sh\n")), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the leader sees the topology", func() error {
		if users, _ := leader.svc.blobUsers(t.Context(), "dict", false); len(users) == 0 {
			return errors.New("no user yet")
		}
		return nil
	})
	_, err = nimbusv1.NewNimbusServiceClient(conn).DeleteBlob(ctx, &nimbusv1.DeleteBlobRequest{Key: "dict"})
	checkRefused(t, err, codes.FailedPrecondition, resp.GetTopologyId())

	// Killed, the topology lets go; the delete removes every copy.
	zero := int32(0)
	if _, err := nimbusv1.NewNimbusServiceClient(conn).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "reader", WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 20*time.Second, "dict deleted", func() error {
		_, err := nimbusv1.NewNimbusServiceClient(conn).DeleteBlob(ctx, &nimbusv1.DeleteBlobRequest{Key: "dict"})
		return err
	})
	testcluster.WaitFor(t, 20*time.Second, "every copy removed", func() error {
		for _, s := range servers {
			if s.blobStore.Has("dict") {
				return fmt.Errorf("%s still holds dict", s.Addr())
			}
		}
		return nil
	})
	_, _, err = rawBlobRead(ctx, conn, "dict")
	checkRefused(t, err, codes.NotFound, "dict")
	// The key is free again.
	if _, _, err := rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "dict", ReplicationFactor: &three}, []byte("new"), nil); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
	if !strings.Contains(fmt.Sprint(leader.blobs.Distributions.Snapshot()["dict"].GetAcl()), "o::rwa") {
		t.Fatalf("without authentication the ACL lets anyone do anything, got %v", leader.blobs.Distributions.Snapshot()["dict"].GetAcl())
	}
}

// mustBlobDigest is the digest of key's current version, as the leader
// read it.
func mustBlobDigest(t *testing.T, s *Server, key string) []byte {
	t.Helper()
	m, _, err := s.sess.Read().Blob(key)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.GetCodeMetaDigest()) == 0 {
		t.Fatalf("%s has no digest", key)
	}
	return m.GetCodeMetaDigest()
}

// A blob over nimbus.blobstore.max.blob.bytes, declared or streamed, and
// an upload that stalls are refused naming why; nothing is stored and the
// key is free again.
func TestInProcessBlobUploadLimits(t *testing.T) {
	zk := testcluster.StartZooKeeper(t)
	s := startWith(t, zk.Addr(), t.TempDir(), func(c *configs.Config) {
		c.BlobMaxBytes = 1 << 20
		c.BlobstoreReplication = 1
		c.NimbusUploadIdleTimeout = time.Second
	})
	awaitLeading(t, s)
	conn := dial(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	declared := int64(2 << 20)
	_, _, err := rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "big", Size: &declared}, []byte("x"), nil)
	checkRefused(t, err, codes.InvalidArgument, "header.size", configs.KeyBlobMaxBytes)
	_, _, err = rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "big"}, make([]byte, 1<<20+1), nil)
	checkRefused(t, err, codes.InvalidArgument, "blob", configs.KeyBlobMaxBytes)

	// A header, then silence.
	stream, err := nimbusv1.NewNimbusServiceClient(conn).CreateBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Header{Header: &nimbusv1.BlobHeader{Key: "big"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = stream.CloseAndRecv()
	checkRefused(t, err, codes.InvalidArgument, "trailer") // the stream ended without one
	stalled, err := nimbusv1.NewNimbusServiceClient(conn).CreateBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = stalled.Send(&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Header{Header: &nimbusv1.BlobHeader{Key: "big"}}})
	_ = stalled.Send(&nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Chunk{Chunk: []byte("half")}})
	var resp nimbusv1.CreateBlobResponse
	err = stalled.RecvMsg(&resp) // the server gives up after the idle timeout
	checkRefused(t, err, codes.DeadlineExceeded, configs.KeyNimbusUploadIdleTimeout, "nothing was stored")

	if got, _ := os.ReadDir(filepath.Join(s.blobStore.Root(), "tmp")); len(got) != 0 {
		t.Fatalf("the blob store's tmp holds %d entries", len(got))
	}
	if _, _, err := rawBlobWrite(ctx, conn, true, &nimbusv1.BlobHeader{Key: "big"}, []byte("fits"), nil); err != nil {
		t.Fatalf("the key is not free again: %v", err)
	}
}
