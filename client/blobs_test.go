package client

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// blobLeader serves a fake leader that answers the blob RPCs from an
// in-memory store, and returns its address, the server and the store.
func blobLeader(t *testing.T) (string, *fakenimbus.Server, *fakenimbus.Blobs) {
	t.Helper()
	lis, addr := fakenimbus.Listen(t)
	f := &fakenimbus.Server{OnGetLeader: fakenimbus.LeaderAt(addr)}
	blobs := &fakenimbus.Blobs{Owner: "alice"}
	blobs.Serve(f)
	f.Serve(t, lis)
	return addr, f, blobs
}

// blobFollower serves a fake follower that names itself leader (a stale
// view) and answers every leader-only blob RPC NOT_LEADER naming leader,
// uploads after reading their header and a chunk; it lists blobs as the
// leader's server lists them.
func blobFollower(t *testing.T, leader string, leaderServer *fakenimbus.Server) (string, *fakenimbus.Server) {
	t.Helper()
	lis, addr := fakenimbus.Listen(t)
	recvTwice := func(recv func() error) error {
		for range 2 {
			if err := recv(); err != nil {
				return err
			}
		}
		return fakenimbus.NotLeader(leader)
	}
	f := &fakenimbus.Server{
		OnGetLeader: fakenimbus.LeaderAt(addr),
		OnCreateBlob: func(s fakenimbus.CreateBlobStream) error {
			return recvTwice(func() error { _, err := s.Recv(); return err })
		},
		OnUpdateBlob: func(s fakenimbus.UpdateBlobStream) error {
			return recvTwice(func() error { _, err := s.Recv(); return err })
		},
		OnReadBlob: func(*nimbusv1.ReadBlobRequest, fakenimbus.ReadBlobStream) error {
			return fakenimbus.NotLeader(leader)
		},
		OnSetBlobMeta: func(*nimbusv1.SetBlobMetaRequest) (*nimbusv1.SetBlobMetaResponse, error) {
			return nil, fakenimbus.NotLeader(leader)
		},
		OnListBlobs: leaderServer.OnListBlobs,
	}
	f.Serve(t, lis)
	return addr, f
}

// headers returns the blob headers f received for rpc, in order.
func headers(f *fakenimbus.Server, rpc string) []*nimbusv1.BlobHeader {
	var out []*nimbusv1.BlobHeader
	for _, m := range f.Requests(rpc) {
		out = append(out, m.(*nimbusv1.BlobHeader))
	}
	return out
}

func TestCreateBlobStreamsContentOfUnknownSize(t *testing.T) {
	ctx := testContext(t)
	addr, f, blobs := blobLeader(t)
	content := randomArtifact(t, 2*MaxChunkSize+MaxChunkSize/2)
	factor := int32(2)

	var progress []int64
	c := newClient(t, []string{addr})
	unseekable := struct{ io.Reader }{bytes.NewReader(content)}
	resp, err := c.CreateBlob(ctx, "words.txt", unseekable, BlobOptions{
		ACL: []string{"o::r--"}, ReplicationFactor: &factor, Size: -1,
		Progress: func(sent int64) { progress = append(progress, sent) },
	})
	if err != nil {
		t.Fatalf("CreateBlob: %v", err)
	}
	if got := resp.GetBlob(); got.GetVersion() != 1 || got.GetSize() != int64(len(content)) || got.GetReplicationFactor() != 2 {
		t.Errorf("answer %v, want version 1, %d bytes, factor 2", got, len(content))
	}
	if stored, _ := blobs.Content("words.txt"); !bytes.Equal(stored, content) {
		t.Errorf("the leader stored %d bytes that differ from the %d sent", len(stored), len(content))
	}
	if got, want := blobs.ChunkLens(), []int{MaxChunkSize, MaxChunkSize, MaxChunkSize / 2}; !slices.Equal(got, want) {
		t.Errorf("chunks of %v bytes, want %v", got, want)
	}
	if want := []int64{MaxChunkSize, 2 * MaxChunkSize, int64(len(content))}; !slices.Equal(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
	want := &nimbusv1.BlobHeader{Key: "words.txt", Acl: []string{"o::r--"}, ReplicationFactor: &factor}
	if h := headers(f, "CreateBlob"); len(h) != 1 || !proto.Equal(h[0], want) {
		t.Errorf("headers %v, want %v (no size: it was unknown)", h, want)
	}
}

func TestCreateBlobDeclaresAKnownSize(t *testing.T) {
	ctx := testContext(t)
	addr, f, _ := blobLeader(t)
	c := newClient(t, []string{addr})
	if _, err := c.CreateBlob(ctx, "empty", bytes.NewReader(nil), BlobOptions{}); err != nil {
		t.Fatalf("CreateBlob of nothing: %v", err)
	}
	_, err := c.CreateBlob(ctx, "ten", bytes.NewReader(make([]byte, 10)), BlobOptions{Size: 10})
	if err != nil {
		t.Fatalf("CreateBlob: %v", err)
	}
	h := headers(f, "CreateBlob")
	if len(h) != 2 || h[0].Size != nil || h[1].GetSize() != 10 {
		t.Errorf("headers %v, want no size, then size 10", h)
	}
	// Content shorter than its declared size is never completed.
	_, err = c.CreateBlob(ctx, "short", bytes.NewReader(make([]byte, 5)), BlobOptions{Size: 10})
	if err == nil || status.Code(err) != codes.Unknown {
		t.Errorf("CreateBlob of 5 of 10 bytes: got %v, want the client's own error", err)
	}
	if _, err := c.ReadBlob(ctx, "short", io.Discard); status.Code(err) != codes.NotFound {
		t.Errorf("the short blob: got %v, want NotFound", err)
	}
}

func TestBlobUploadsFollowTheLeaderWithSeekableContent(t *testing.T) {
	ctx := testContext(t)
	leaderAddr, leader, blobs := blobLeader(t)
	followerAddr, follower := blobFollower(t, leaderAddr, leader)
	content := randomArtifact(t, 2*MaxChunkSize)

	c := newClient(t, []string{followerAddr})
	if _, err := c.CreateBlob(ctx, "model", bytes.NewReader(content), BlobOptions{Size: -1}); err != nil {
		t.Fatalf("CreateBlob: %v", err)
	}
	c = newClient(t, []string{followerAddr})
	update := append(slices.Clone(content), 'x')
	resp, err := c.UpdateBlob(ctx, "model", bytes.NewReader(update), BlobOptions{Size: int64(len(update))})
	if err != nil {
		t.Fatalf("UpdateBlob: %v", err)
	}
	if resp.GetBlob().GetVersion() != 2 {
		t.Errorf("version %d after an update, want 2", resp.GetBlob().GetVersion())
	}
	if stored, _ := blobs.Content("model"); !bytes.Equal(stored, update) {
		t.Error("the leader does not hold the update")
	}
	if follower.Calls("CreateBlob") != 1 || follower.Calls("UpdateBlob") != 1 {
		t.Errorf("the follower had %d creates and %d updates, want 1 each", follower.Calls("CreateBlob"), follower.Calls("UpdateBlob"))
	}

	// Content that cannot be read again is not sent twice.
	c = newClient(t, []string{followerAddr})
	unseekable := struct{ io.Reader }{bytes.NewReader(content)}
	_, err = c.CreateBlob(ctx, "other", unseekable, BlobOptions{})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("got %v, want the follower's FailedPrecondition", err)
	}
	if _, ok := blobs.Content("other"); ok {
		t.Error("the leader got a half-read upload")
	}
}

func TestUpdateBlobRefusesCreateOnlyOptions(t *testing.T) {
	ctx := testContext(t)
	addr, f, _ := blobLeader(t)
	c := newClient(t, []string{addr})
	factor := int32(1)
	for _, opts := range []BlobOptions{{ACL: []string{"o::r--"}}, {ReplicationFactor: &factor}} {
		if _, err := c.UpdateBlob(ctx, "k", bytes.NewReader(nil), opts); err == nil {
			t.Errorf("UpdateBlob with %+v: want an error", opts)
		}
	}
	if n := f.Calls("UpdateBlob"); n != 0 {
		t.Errorf("%d updates reached the leader, want 0", n)
	}
}

func TestReadBlobVerifiesTheContent(t *testing.T) {
	ctx := testContext(t)
	leaderAddr, leader, blobs := blobLeader(t)
	followerAddr, follower := blobFollower(t, leaderAddr, leader)
	content := randomArtifact(t, MaxChunkSize+1)
	blobs.Put(&nimbusv1.BlobInfo{Key: "good"}, content)
	blobs.Put(&nimbusv1.BlobInfo{Key: "bad", ContentSha256: make([]byte, 32)}, content)

	c := newClient(t, []string{followerAddr})
	var got bytes.Buffer
	info, err := c.ReadBlob(ctx, "good", &got)
	if err != nil {
		t.Fatalf("ReadBlob: %v", err)
	}
	if !bytes.Equal(got.Bytes(), content) || info.GetKey() != "good" {
		t.Errorf("read %d bytes of %q, want the %d bytes of good", got.Len(), info.GetKey(), len(content))
	}
	if n := follower.Calls("ReadBlob"); n != 1 {
		t.Errorf("the follower had %d reads, want 1 (then the redirect)", n)
	}

	_, err = c.ReadBlob(ctx, "bad", io.Discard)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Errorf("ReadBlob of content that is not its SHA-256: got %v, want ErrBlobMismatch", err)
	}
}

func TestBlobMetaCalls(t *testing.T) {
	ctx := testContext(t)
	leaderAddr, leader, blobs := blobLeader(t)
	followerAddr, follower := blobFollower(t, leaderAddr, leader)
	blobs.Put(&nimbusv1.BlobInfo{Key: "a", ReplicationFactor: 3}, []byte("a"))
	blobs.Put(&nimbusv1.BlobInfo{Key: "b", UsedBy: []string{"wordcount-1-1"}}, []byte("b"))

	c := newClient(t, []string{followerAddr})
	info, err := c.SetBlobACL(ctx, "a", []string{"u:bob:r--"})
	if err != nil || !slices.Equal(info.GetAcl(), []string{"u:bob:r--"}) {
		t.Errorf("SetBlobACL: %v, %v", info, err)
	}
	info, err = c.SetBlobReplication(ctx, "a", 5)
	if err != nil || info.GetReplicationFactor() != 5 || !slices.Equal(info.GetAcl(), []string{"u:bob:r--"}) {
		t.Errorf("SetBlobReplication: %v, %v (want factor 5, the ACL kept)", info, err)
	}
	want := []proto.Message{
		&nimbusv1.SetBlobMetaRequest{Key: "a", Acl: []string{"u:bob:r--"}, SetAcl: true},
		&nimbusv1.SetBlobMetaRequest{Key: "a", ReplicationFactor: proto.Int32(5)},
	}
	if got := leader.Requests("SetBlobMeta"); len(got) != 2 || !proto.Equal(got[0], want[0]) || !proto.Equal(got[1], want[1]) {
		t.Errorf("the leader received %v, want %v", got, want)
	}

	list, err := c.ListBlobs(ctx)
	if err != nil || len(list.GetBlobs()) != 2 {
		t.Fatalf("ListBlobs: %v, %v", list, err)
	}
	list, err = c.ListBlobs(ctx, "b")
	if err != nil || len(list.GetBlobs()) != 1 || list.GetBlobs()[0].GetKey() != "b" {
		t.Errorf("ListBlobs(b): %v, %v", list, err)
	}

	if err := c.DeleteBlob(ctx, "b"); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("DeleteBlob of a used blob: got %v, want FailedPrecondition", err)
	}
	if err := c.DeleteBlob(ctx, "a"); err != nil {
		t.Errorf("DeleteBlob: %v", err)
	}
	if err := c.DeleteBlob(ctx, "a"); status.Code(err) != codes.NotFound {
		t.Errorf("DeleteBlob again: got %v, want NotFound", err)
	}
	if n := follower.Calls("ListBlobs"); n != 2 {
		t.Errorf("the follower had %d lists, want 2: any nimbus answers", n)
	}
	if n := leader.Calls("DeleteBlob"); n != 3 {
		t.Errorf("the leader had %d deletes, want 3: none retried", n)
	}
}
