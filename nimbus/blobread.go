package nimbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Reading and listing blobs (docs/ARCHITECTURE.md section 24, "Reads").
func (s *service) ReadBlob(req *nimbusv1.ReadBlobRequest, stream nimbusv1.NimbusService_ReadBlobServer) error {
	if err := validate.ReadBlob(req); err != nil {
		return apistatus.ToStatus(err)
	}
	return apistatus.ToStatus(s.readBlob(stream.Context(), req.GetKey(), stream))
}

// readBlob streams the current version from this nimbus's store, as the
// leader reads it: once it holds it (a new leader may still be fetching),
// verified as it is sent. An update installed mid-read starts it over.
func (s *service) readBlob(ctx context.Context, key string, stream nimbusv1.NimbusService_ReadBlobServer) error {
	if _, err := s.leaderTerm(ctx); err != nil {
		return err
	}
	for range 3 {
		m, _, err := s.blobFor(ctx, key, auth.ActionReadBlob, false)
		if err != nil {
			return err
		}
		if err := s.awaitHeld(ctx, key, m); err != nil {
			return err
		}
		f, file, err := s.blobStore.Open(key, blobstore.File)
		if err != nil {
			return err
		}
		moved := !bytes.Equal(file.GetSha256(), m.GetContentSha256())
		if !moved {
			err = s.sendBlob(stream, key, m, f)
		}
		f.Close()
		if !moved {
			return err
		}
	}
	return apierr.NotCommitted(fmt.Errorf("blob %q changed three times during the read; try again", key))
}

// maxHeldWait bounds how long a read waits for this nimbus to hold the
// version it names: one held nowhere (LOST) must not hold the handler
// for as long as the client would wait.
const maxHeldWait = 30 * time.Second

// awaitHeld waits until this nimbus holds m's version of key, at most
// maxHeldWait.
func (s *service) awaitHeld(ctx context.Context, key string, m *clusterv1.BlobMeta) error {
	wait, cancel := context.WithTimeout(ctx, maxHeldWait)
	defer cancel()
	err := s.blobSync.Await(wait, key, m.GetCodeMetaDigest())
	if err == nil || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%w: this nimbus does not hold blob %q version %d yet (%d nimbuses do); try again", apierr.ErrUnavailable,
		key, m.GetVersion(), cluster.CountHolding(s.blobs.Replicas(key), m.GetCodeMetaDigest()))
}

// sendBlob sends the info, then the content, hashing it: a copy that does
// not match is reported to the store (it is fetched again) and the read
// fails with DATA_LOSS.
func (s *service) sendBlob(stream nimbusv1.NimbusService_ReadBlobServer, key string, m *clusterv1.BlobMeta, f *os.File) error {
	info := blobstore.Info(key, m, s.blobs.Replicas(key))
	if err := stream.Send(&nimbusv1.ReadBlobResponse{Part: &nimbusv1.ReadBlobResponse_Info{Info: info}}); err != nil {
		return err
	}
	h := sha256.New()
	buf := make([]byte, maxChunk)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if err := stream.Send(&nimbusv1.ReadBlobResponse{Part: &nimbusv1.ReadBlobResponse_Chunk{Chunk: buf[:n]}}); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, m.GetContentSha256()) {
		s.blobStore.ReportCorrupt(key)
		return fmt.Errorf("%w: blob %q on this nimbus does not match its SHA-256; it is being fetched again", apierr.ErrDataLoss, key)
	}
	return nil
}

func (s *service) ListBlobs(ctx context.Context, req *nimbusv1.ListBlobsRequest) (*nimbusv1.ListBlobsResponse, error) {
	if err := validate.ListBlobs(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	resp, err := s.listBlobs(ctx, req.GetKeys())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return resp, nil
}

// listBlobs answers from this nimbus's cache: the blobs named (all when
// none are), those the caller may read. The leader adds which live
// topologies use each.
func (s *service) listBlobs(ctx context.Context, keys []string) (*nimbusv1.ListBlobsResponse, error) {
	all := s.blobs.Distributions.Snapshot()
	named := len(keys) > 0
	if !named {
		for key := range all {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	keys = slices.Compact(keys)
	leads := s.election.Current() != nil
	resp := &nimbusv1.ListBlobsResponse{}
	for _, key := range keys {
		m, ok := all[key]
		if !ok && named {
			return nil, fmt.Errorf("%w: %q", apierr.ErrBlobNotFound, key)
		}
		if m == nil {
			continue // absent, or undecodable (the cache logs it)
		}
		if !s.authz.May(ctx, auth.ActionReadBlob, blobstore.Target(key, m, auth.ActionReadBlob)) {
			continue
		}
		info := blobstore.Info(key, m, s.blobs.Replicas(key))
		if leads {
			info.UsedBy, _ = s.blobUsers(ctx, key, false)
		}
		resp.Blobs = append(resp.Blobs, info)
	}
	return resp, nil
}
