package fakenimbus

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apistatus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The server's sides of the blob streams.
type (
	CreateBlobStream = grpc.ClientStreamingServer[nimbusv1.CreateBlobRequest, nimbusv1.CreateBlobResponse]
	UpdateBlobStream = grpc.ClientStreamingServer[nimbusv1.UpdateBlobRequest, nimbusv1.UpdateBlobResponse]
	ReadBlobStream   = grpc.ServerStreamingServer[nimbusv1.ReadBlobResponse]
)

// blobChunk is the most content one ReadBlob message carries, as the
// API allows.
const blobChunk = 1 << 20

// Blobs is an in-memory blob store that answers the blob RPCs as a leader
// would, without ACLs: every caller may do everything. Requests are
// checked by validate, as the leader checks them; the ACL is kept as
// given; ListBlobs answers NotFound for a key named that it does not
// hold. Every blob is replicated at once (replication_count is its
// factor, state OK). Its zero value is an empty store; Serve makes a
// Server answer from it.
type Blobs struct {
	// Owner is the owner of the blobs it creates ("" : "anonymous").
	Owner string

	mu     sync.Mutex
	blobs  map[string]*blob
	chunks []int // the length of each chunk received, in order
}

// blob is one stored blob: its info and its content.
type blob struct {
	info    *nimbusv1.BlobInfo
	content []byte
}

// DefaultBlobReplication is the factor of a blob created without one, as
// storm.blobstore.replication.factor's default.
const DefaultBlobReplication = 3

// Serve sets s's blob On funcs to answer from b.
func (b *Blobs) Serve(s *Server) {
	s.OnCreateBlob = b.create
	s.OnUpdateBlob = b.update
	s.OnReadBlob = b.read
	s.OnDeleteBlob = b.delete
	s.OnListBlobs = b.list
	s.OnSetBlobMeta = b.setMeta
}

// Put stores a blob directly, replacing one under the same key, as if
// created with info's fields and content; version, size and SHA-256 are
// filled in when unset.
func (b *Blobs) Put(info *nimbusv1.BlobInfo, content []byte) {
	info = proto.CloneOf(info)
	if info.GetVersion() == 0 {
		info.Version = 1
	}
	sum := sha256.Sum256(content)
	if info.ContentSha256 == nil {
		info.ContentSha256 = sum[:]
	}
	info.Size = int64(len(content))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.store(info, bytes.Clone(content))
}

// Content returns the content stored under key and whether there is one.
func (b *Blobs) Content(key string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bl, ok := b.blobs[key]
	if !ok {
		return nil, false
	}
	return bytes.Clone(bl.content), true
}

// ChunkLens returns the length of every chunk the store received, in
// order, over all uploads.
func (b *Blobs) ChunkLens() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.chunks)
}

func (b *Blobs) store(info *nimbusv1.BlobInfo, content []byte) {
	if b.blobs == nil {
		b.blobs = map[string]*blob{}
	}
	b.blobs[info.GetKey()] = &blob{info: info, content: content}
}

// received is one upload, read whole.
type received struct {
	header  *nimbusv1.BlobHeader
	content []byte
}

// receive reads an upload (header, chunks, trailer, end of stream) with
// recv, the stream's Recv as parts, and checks it: the header as the
// leader would, the size it declares and the trailer's SHA-256.
func (b *Blobs) receive(create bool, recv func() (header *nimbusv1.BlobHeader, chunk []byte, trailer *nimbusv1.ArtifactTrailer, err error)) (*received, error) {
	header, _, _, err := recv()
	if err != nil {
		return nil, err
	}
	if err := validate.BlobHeader(header, create); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	var content []byte
	for {
		h, chunk, trailer, err := recv()
		switch {
		case err != nil:
			return nil, err
		case h != nil:
			return nil, status.Error(codes.InvalidArgument, "header: sent twice")
		case trailer != nil:
			if sum := sha256.Sum256(content); !bytes.Equal(sum[:], trailer.GetSha256()) {
				return nil, status.Error(codes.InvalidArgument, "trailer.sha256: does not match the content")
			}
			if header.Size != nil && header.GetSize() != int64(len(content)) {
				return nil, status.Errorf(codes.InvalidArgument, "header.size: %d, but %d bytes came", header.GetSize(), len(content))
			}
			if _, _, _, err := recv(); err != io.EOF {
				return nil, status.Errorf(codes.InvalidArgument, "message after trailer: %v", err)
			}
			return &received{header: header, content: content}, nil
		default:
			b.mu.Lock()
			b.chunks = append(b.chunks, len(chunk))
			b.mu.Unlock()
			content = append(content, chunk...)
		}
	}
}

func (b *Blobs) create(stream CreateBlobStream) error {
	got, err := b.receive(true, func() (*nimbusv1.BlobHeader, []byte, *nimbusv1.ArtifactTrailer, error) {
		msg, err := stream.Recv()
		return msg.GetHeader(), msg.GetChunk(), msg.GetTrailer(), err
	})
	if err != nil {
		return err
	}
	h := got.header
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.blobs[h.GetKey()]; ok {
		return status.Errorf(codes.AlreadyExists, "blob %q exists", h.GetKey())
	}
	owner := cmp.Or(b.Owner, "anonymous")
	acl := h.GetAcl()
	if len(acl) == 0 {
		acl = []string{"u:" + owner + ":rwa"}
	}
	factor := int32(DefaultBlobReplication)
	if h.ReplicationFactor != nil {
		factor = h.GetReplicationFactor()
	}
	now := time.Now().UnixMilli()
	sum := sha256.Sum256(got.content)
	info := &nimbusv1.BlobInfo{
		Key: h.GetKey(), Version: 1, ContentSha256: sum[:], Size: int64(len(got.content)),
		Owner: owner, Acl: acl, ReplicationFactor: factor, ReplicationCount: factor, State: "OK",
		CreatedUnixMs: now, UpdatedUnixMs: now,
	}
	b.store(info, got.content)
	return stream.SendAndClose(&nimbusv1.CreateBlobResponse{Blob: proto.CloneOf(info)})
}

func (b *Blobs) update(stream UpdateBlobStream) error {
	got, err := b.receive(false, func() (*nimbusv1.BlobHeader, []byte, *nimbusv1.ArtifactTrailer, error) {
		msg, err := stream.Recv()
		return msg.GetHeader(), msg.GetChunk(), msg.GetTrailer(), err
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bl, err := b.get(got.header.GetKey())
	if err != nil {
		return err
	}
	sum := sha256.Sum256(got.content)
	info := proto.CloneOf(bl.info)
	info.Version++
	info.ContentSha256, info.Size, info.UpdatedUnixMs = sum[:], int64(len(got.content)), time.Now().UnixMilli()
	b.store(info, got.content)
	return stream.SendAndClose(&nimbusv1.UpdateBlobResponse{Blob: proto.CloneOf(info)})
}

// get returns the blob under key, or NotFound. b.mu is held.
func (b *Blobs) get(key string) (*blob, error) {
	bl, ok := b.blobs[key]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "blob %q not found", key)
	}
	return bl, nil
}

func (b *Blobs) read(req *nimbusv1.ReadBlobRequest, stream ReadBlobStream) error {
	if err := validate.ReadBlob(req); err != nil {
		return apistatus.ToStatus(err)
	}
	b.mu.Lock()
	bl, err := b.get(req.GetKey())
	b.mu.Unlock()
	if err != nil {
		return err
	}
	if err := stream.Send(&nimbusv1.ReadBlobResponse{Part: &nimbusv1.ReadBlobResponse_Info{Info: proto.CloneOf(bl.info)}}); err != nil {
		return err
	}
	for rest := bl.content; len(rest) > 0; {
		n := min(len(rest), blobChunk)
		if err := stream.Send(&nimbusv1.ReadBlobResponse{Part: &nimbusv1.ReadBlobResponse_Chunk{Chunk: rest[:n]}}); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func (b *Blobs) delete(req *nimbusv1.DeleteBlobRequest) error {
	if err := validate.DeleteBlob(req); err != nil {
		return apistatus.ToStatus(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bl, err := b.get(req.GetKey())
	if err != nil {
		return err
	}
	if used := bl.info.GetUsedBy(); len(used) > 0 {
		return status.Errorf(codes.FailedPrecondition, "blob %q is used by live topologies: %s", req.GetKey(), strings.Join(used, ", "))
	}
	delete(b.blobs, req.GetKey())
	return nil
}

func (b *Blobs) list(req *nimbusv1.ListBlobsRequest) (*nimbusv1.ListBlobsResponse, error) {
	if err := validate.ListBlobs(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := req.GetKeys()
	if len(keys) == 0 {
		for k := range b.blobs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	resp := &nimbusv1.ListBlobsResponse{}
	for _, k := range keys {
		bl, err := b.get(k)
		if err != nil {
			return nil, err
		}
		resp.Blobs = append(resp.Blobs, proto.CloneOf(bl.info))
	}
	return resp, nil
}

func (b *Blobs) setMeta(req *nimbusv1.SetBlobMetaRequest) (*nimbusv1.SetBlobMetaResponse, error) {
	if err := validate.SetBlobMeta(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bl, err := b.get(req.GetKey())
	if err != nil {
		return nil, err
	}
	info := proto.CloneOf(bl.info)
	if req.GetSetAcl() {
		info.Acl = req.GetAcl()
	}
	if req.ReplicationFactor != nil {
		info.ReplicationFactor, info.ReplicationCount = req.GetReplicationFactor(), req.GetReplicationFactor()
	}
	info.UpdatedUnixMs = time.Now().UnixMilli()
	bl.info = info
	return &nimbusv1.SetBlobMetaResponse{Blob: proto.CloneOf(info)}, nil
}
