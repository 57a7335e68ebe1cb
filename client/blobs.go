package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// ErrBlobMismatch: the content ReadBlob received does not have the size or
// SHA-256 its BlobInfo states. What was written is not the blob.
var ErrBlobMismatch = errors.New("client: blob content does not match its info")

// BlobOptions are the optional parts of a blob upload.
type BlobOptions struct {
	// ACL is the blob's access list in Storm's syntax ("u:alice:rwa",
	// "o::r--"); create only. Empty: the leader's default (the creator
	// gets rwa).
	ACL []string
	// ReplicationFactor is how many nimbuses must hold the blob; create
	// only. Nil: storm.blobstore.replication.factor.
	ReplicationFactor *int32
	// Size is the content's length when known: exactly that many bytes
	// are read, and the leader refuses a blob over its maximum before the
	// upload. -1 (or 0) reads the content to its end.
	Size int64
	// Progress, if not nil, is called after each chunk with the bytes
	// sent so far.
	Progress func(sent int64)
}

// CreateBlob uploads a new blob under key to the leader: a header, the
// content in chunks of at most MaxChunkSize, then their SHA-256. The
// caller becomes its owner. It blocks until the leader acknowledges,
// after the blob's replication factor of nimbuses hold it or the
// replication wait ended (the answer says which), so ctx must allow for
// that; WithCallTimeout does not apply.
//
// It is retried like SubmitTopology (see there): a NOT_LEADER or ABORTED
// answer sends the content again, from its start, which needs r to be an
// io.Seeker (an *os.File, a *bytes.Reader) once any of it was read. A key
// that exists is AlreadyExists; a key or ACL that Storm's rules refuse is
// InvalidArgument.
func (c *Client) CreateBlob(ctx context.Context, key string, r io.Reader, opts BlobOptions) (*nimbusv1.CreateBlobResponse, error) {
	header := blobHeader(key, opts)
	header.Acl, header.ReplicationFactor = opts.ACL, opts.ReplicationFactor
	return uploadToLeader(ctx, c, upload[nimbusv1.CreateBlobRequest, nimbusv1.CreateBlobResponse]{
		rpc:  "CreateBlob",
		what: "content",
		open: nimbusv1.NimbusServiceClient.CreateBlob,
		header: func() *nimbusv1.CreateBlobRequest {
			return &nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Header{Header: header}}
		},
		chunk: func(b []byte) *nimbusv1.CreateBlobRequest {
			return &nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Chunk{Chunk: b}}
		},
		trailer: func(sum []byte) *nimbusv1.CreateBlobRequest {
			return &nimbusv1.CreateBlobRequest{Part: &nimbusv1.CreateBlobRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{Sha256: sum}}}
		},
	}, r, uploadSize(opts.Size), opts.Progress)
}

// UpdateBlob uploads a new version of the blob under key, streamed and
// retried as CreateBlob, and acknowledged like it once the version is
// replicated. Only opts.Size and opts.Progress apply: the ACL and the
// replication factor are changed by SetBlobACL and SetBlobReplication,
// and setting them here is an error. Needs write on the blob.
func (c *Client) UpdateBlob(ctx context.Context, key string, r io.Reader, opts BlobOptions) (*nimbusv1.UpdateBlobResponse, error) {
	switch {
	case len(opts.ACL) > 0:
		return nil, errors.New("client: UpdateBlob: ACL is set at create; SetBlobACL changes it")
	case opts.ReplicationFactor != nil:
		return nil, errors.New("client: UpdateBlob: ReplicationFactor is set at create; SetBlobReplication changes it")
	}
	header := blobHeader(key, opts)
	return uploadToLeader(ctx, c, upload[nimbusv1.UpdateBlobRequest, nimbusv1.UpdateBlobResponse]{
		rpc:  "UpdateBlob",
		what: "content",
		open: nimbusv1.NimbusServiceClient.UpdateBlob,
		header: func() *nimbusv1.UpdateBlobRequest {
			return &nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Header{Header: header}}
		},
		chunk: func(b []byte) *nimbusv1.UpdateBlobRequest {
			return &nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Chunk{Chunk: b}}
		},
		trailer: func(sum []byte) *nimbusv1.UpdateBlobRequest {
			return &nimbusv1.UpdateBlobRequest{Part: &nimbusv1.UpdateBlobRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{Sha256: sum}}}
		},
	}, r, uploadSize(opts.Size), opts.Progress)
}

// blobHeader is an upload's header: the key, and the size when known.
func blobHeader(key string, opts BlobOptions) *nimbusv1.BlobHeader {
	h := &nimbusv1.BlobHeader{Key: key}
	if opts.Size > 0 {
		size := opts.Size
		h.Size = &size
	}
	return h
}

// uploadSize is BlobOptions.Size as uploadToLeader reads it: -1 unless
// known.
func uploadSize(size int64) int64 {
	if size > 0 {
		return size
	}
	return -1
}

// ReadBlob writes the current version of the blob under key to w and
// returns its info. The leader serves it, so it follows every update
// acknowledged before the call. NOT_LEADER is followed, and Unavailable
// retried within the retry budget, while nothing was written to w; any
// failure after that is returned. At the end the content's size and
// SHA-256 are checked against the info: a mismatch is an error that
// errors.Is ErrBlobMismatch, and what was written must be discarded (so
// must it after any error). Needs read on the blob; an unknown key is
// NotFound. WithCallTimeout does not apply: ctx bounds it.
func (c *Client) ReadBlob(ctx context.Context, key string, w io.Writer) (*nimbusv1.BlobInfo, error) {
	r := c.newRetrier()
	redirects := 0
	for {
		addr, err := c.leaderAddr(ctx)
		if err == nil {
			var info *nimbusv1.BlobInfo
			var written int64
			info, written, err = c.readBlobAt(ctx, addr, key, w)
			if err == nil || written > 0 {
				return info, err
			}
			if to, ok := notLeader(err); ok && to != "" {
				if rerr := c.redirect("ReadBlob", addr, to, &redirects, err); rerr != nil {
					return nil, rerr
				}
				continue
			}
		}
		if rerr := r.retryAfter(ctx, "ReadBlob", addr, err); rerr != nil {
			return nil, rerr
		}
	}
}

// readBlobAt reads the blob from the nimbus at addr into w, checking it
// against its info, and says how many bytes it wrote.
func (c *Client) readBlobAt(ctx context.Context, addr, key string, w io.Writer) (*nimbusv1.BlobInfo, int64, error) {
	cn, err := c.conn(addr)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream if reading stopped early
	stream, err := cn.api.ReadBlob(ctx, &nimbusv1.ReadBlobRequest{Key: key})
	if err != nil {
		return nil, 0, err
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, 0, err
	}
	info := first.GetInfo()
	if info == nil {
		return nil, 0, errors.New("client: ReadBlob: the stream did not start with the blob's info")
	}
	sum := sha256.New()
	var written int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, written, err
		}
		chunk := msg.GetChunk()
		sum.Write(chunk)
		n, err := w.Write(chunk)
		written += int64(n)
		if err != nil {
			return nil, written, fmt.Errorf("client: ReadBlob: writing %s: %w", key, err)
		}
	}
	if written != info.GetSize() {
		return nil, written, fmt.Errorf("%w: %s: received %d bytes, its info says %d", ErrBlobMismatch, key, written, info.GetSize())
	}
	if got := sum.Sum(nil); !bytes.Equal(got, info.GetContentSha256()) {
		return nil, written, fmt.Errorf("%w: %s: received content of SHA-256 %s, its info says %s",
			ErrBlobMismatch, key, hex.EncodeToString(got), hex.EncodeToString(info.GetContentSha256()))
	}
	return info, written, nil
}

// DeleteBlob removes the blob under key at the leader. Needs write on the
// blob; an unknown key is NotFound, and a blob that a live topology uses
// is refused (FailedPrecondition, naming the topologies). A delete is
// retried only when it cannot have reached the leader: a retry of one
// that took effect would answer NotFound.
func (c *Client) DeleteBlob(ctx context.Context, key string) error {
	_, err := callLeaderOnce(ctx, c, "DeleteBlob", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.DeleteBlobResponse, error) {
		return api.DeleteBlob(ctx, &nimbusv1.DeleteBlobRequest{Key: key}, opts...)
	})
	return err
}

// ListBlobs lists the blobs under keys, or every blob when none is given,
// that the caller may read, with their replication, from any nimbus (its
// cached view: used_by is filled by the leader only).
func (c *Client) ListBlobs(ctx context.Context, keys ...string) (*nimbusv1.ListBlobsResponse, error) {
	req := &nimbusv1.ListBlobsRequest{Keys: keys}
	return readAny(ctx, c, "ListBlobs", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.ListBlobsResponse, error) {
		return api.ListBlobs(ctx, req, opts...)
	})
}

// SetBlobACL replaces the ACL of the blob under key, in Storm's syntax
// (Storm's `blobstore set-acl -s`), at the leader, and returns the blob as
// changed. Needs admin on the blob; the owner keeps admin whatever acl
// says. Retried like every leader-only call: it sets the whole list.
func (c *Client) SetBlobACL(ctx context.Context, key string, acl []string) (*nimbusv1.BlobInfo, error) {
	return c.setBlobMeta(ctx, "SetBlobACL", &nimbusv1.SetBlobMetaRequest{Key: key, Acl: acl, SetAcl: true})
}

// SetBlobReplication sets the replication factor of the blob under key at
// the leader (Storm's `blobstore replication --update`) and returns the
// blob as changed; the nimbuses then fetch or drop copies. Needs admin on
// the blob. Retried like every leader-only call: it sets a target.
func (c *Client) SetBlobReplication(ctx context.Context, key string, n int32) (*nimbusv1.BlobInfo, error) {
	return c.setBlobMeta(ctx, "SetBlobReplication", &nimbusv1.SetBlobMetaRequest{Key: key, ReplicationFactor: &n})
}

func (c *Client) setBlobMeta(ctx context.Context, rpc string, req *nimbusv1.SetBlobMetaRequest) (*nimbusv1.BlobInfo, error) {
	resp, err := callLeader(ctx, c, rpc, func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.SetBlobMetaResponse, error) {
		return api.SetBlobMeta(ctx, req, opts...)
	})
	if err != nil {
		return nil, err
	}
	return resp.GetBlob(), nil
}
