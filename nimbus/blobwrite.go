package nimbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Creating and updating a blob (docs/ARCHITECTURE.md section 24,
// "Writes"). Writes are the leader's, fenced, at the version of
// /blobstore/<key> they read; one write per key at a time on this nimbus
// (reserveBlob).

// blobMsg is a message of a CreateBlob or UpdateBlob stream.
type blobMsg interface {
	GetHeader() *nimbusv1.BlobHeader
	GetChunk() []byte
	GetTrailer() *nimbusv1.ArtifactTrailer
}

func (s *service) CreateBlob(stream nimbusv1.NimbusService_CreateBlobServer) error {
	info, timedOut, err := writeBlobFrom(s, stream.Context(), stream.Recv, true)
	if err != nil {
		return apistatus.ToStatus(err)
	}
	return stream.SendAndClose(&nimbusv1.CreateBlobResponse{Blob: info, ReplicationWaitTimedOut: timedOut})
}

func (s *service) UpdateBlob(stream nimbusv1.NimbusService_UpdateBlobServer) error {
	info, timedOut, err := writeBlobFrom(s, stream.Context(), stream.Recv, false)
	if err != nil {
		return apistatus.ToStatus(err)
	}
	return stream.SendAndClose(&nimbusv1.UpdateBlobResponse{Blob: info, ReplicationWaitTimedOut: timedOut})
}

// writeBlobFrom adapts a stream's Recv, with the upload idle timeout, to
// writeBlob.
func writeBlobFrom[M blobMsg](s *service, ctx context.Context, recv func() (M, error), create bool) (*nimbusv1.BlobInfo, bool, error) {
	idle := newIdleReceiver(recv, s.config().NimbusUploadIdleTimeout)
	defer idle.close()
	first, err := idle.Recv()
	if errors.Is(err, io.EOF) {
		return nil, false, validate.Invalid("header", "the stream ended before the header")
	}
	if err != nil {
		return nil, false, err
	}
	next := func() (uploadPart, error) {
		msg, err := idle.Recv()
		if err != nil {
			return uploadPart{}, err
		}
		if msg.GetHeader() != nil {
			return uploadPart{}, validate.Invalid("header", "sent twice")
		}
		return uploadPart{chunk: msg.GetChunk(), trailer: msg.GetTrailer()}, nil
	}
	return s.writeBlob(ctx, first.GetHeader(), next, create)
}

// writeBlob is a create or an update as a list of steps. Nothing is
// acknowledged before step 7 commits; a failure before it leaves nothing.
func (s *service) writeBlob(ctx context.Context, h *nimbusv1.BlobHeader, next func() (uploadPart, error), create bool) (*nimbusv1.BlobInfo, bool, error) {
	// 1. The header, validated before anything else.
	if err := validate.BlobHeader(h, create); err != nil {
		return nil, false, err
	}
	key := h.GetKey()
	maxBytes := s.config().BlobMaxBytes // read once: a reload mid-upload changes nothing here
	if h.Size != nil && h.GetSize() > maxBytes {
		return nil, false, validate.Invalid("header.size", "%d bytes, larger than %s (%d)", h.GetSize(), configs.KeyBlobMaxBytes, maxBytes)
	}
	// 2. Leadership, before the upload.
	term, err := s.leaderTerm(ctx)
	if errors.Is(err, apierr.ErrNoLeader) {
		return nil, false, apierr.NotCommitted(err)
	}
	if err != nil {
		return nil, false, err
	}
	// 3. The key, held on this nimbus until the answer.
	release, err := s.reserveBlob(key)
	if err != nil {
		return nil, false, err
	}
	defer release()
	// 4. What the blob is now, and whether the caller may write it.
	prev, version, err := s.blobFor(ctx, key, auth.ActionWriteBlob, create)
	if err != nil {
		return nil, false, err
	}
	nextMeta, err := s.newBlobMeta(ctx, h, prev, term)
	if err != nil {
		return nil, false, err
	}
	// 5. The content, streamed into a temporary directory of the blob store.
	tmp, content, err := s.receiveBlob(h, next, maxBytes)
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(tmp) // a no-op once installed
	// 6. Stored by the backend. What a failure before the commit leaves
	// there, the next write of the key or the leader's sweep removes: a
	// cleanup now could take what another leader committed meanwhile.
	meta, err := s.dist.Upload(ctx, tmp, codedistributor.Code{Kind: codedistributor.KindBlob, TopologyID: key, Meta: blobstore.Meta(key, content)})
	if err != nil {
		return nil, false, fmt.Errorf("%w: nothing was stored: %v", apierr.ErrCodeStoreUnavailable, err)
	}
	_, digest := codedistributor.EncodeMeta(meta)
	fillVersion(nextMeta, digest, content, time.Now())
	// 7. Committed, then installed here, where the other nimbuses fetch it.
	if err := s.commitBlob(ctx, term, key, nextMeta, version, create); err != nil {
		return nil, false, err
	}
	if _, err := s.blobStore.Install(tmp, key, meta); err != nil {
		return nil, false, s.undoBlob(ctx, term, key, prev, version, create, err)
	}
	if term.Context().Err() == nil { // a later leader's versions are not this one's to drop
		s.cleanupBlobBackend(key, nextMeta)
	}
	// 8. Replicated: the blob's replication factor of nimbuses hold it, or
	// topology.max.replication.wait.time.sec passed. The write is
	// committed: whatever ends the wait, it is acknowledged.
	count, timedOut, err := s.awaitBlobReplicas(ctx, term, key, nextMeta)
	if err != nil {
		return nil, false, err
	}
	info := blobstore.Info(key, nextMeta, s.blobs.Replicas(key))
	info.ReplicationCount = int32(max(count, int(info.GetReplicationCount())))
	s.log.Info("blob stored", "key", key, "version", nextMeta.GetVersion(), "bytes", content.GetSize(),
		"replicas", count, "replication_wait_timed_out", timedOut, "by", auth.Who(ctx))
	return info, timedOut, nil
}

// awaitBlobReplicas waits until m's replication factor of nimbuses hold
// its version, at most topology.max.replication.wait.time.sec, while term
// lasts. The write is committed already, so an end of the term, or the
// blob deleted meanwhile, is a wait that timed out, never a failure: a
// client told ABORTED would write it again. Only the client's own end is
// returned.
func (s *service) awaitBlobReplicas(clientCtx context.Context, term *leader.Term, key string, m *clusterv1.BlobMeta) (int, bool, error) {
	set := settingsOf(s.cfg, nil)
	var until time.Time
	if !set.waitForever {
		until = time.Now().Add(set.maxReplicationWait)
	}
	ctx, cancel := context.WithCancel(clientCtx)
	defer cancel()
	stop := context.AfterFunc(term.Context(), cancel)
	defer stop()
	count, timedOut, err := s.blobs.AwaitReplicas(ctx, key, m.GetCodeMetaDigest(), int(m.GetReplicationFactor()), until)
	switch {
	case err == nil:
		return count, timedOut, nil
	case clientCtx.Err() != nil:
		return count, false, clientCtx.Err()
	}
	return count, true, nil
}

// reserveBlob holds key for one write (a create, update, set-meta or
// delete, or the leader's sweep of what the backend keeps of it) on this
// nimbus; another answers ABORTED, to be tried again.
func (s *service) reserveBlob(key string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blobWrites[key] {
		return nil, apierr.NotCommitted(fmt.Errorf("another write of blob %q is in progress; try again", key))
	}
	s.blobWrites[key] = true
	return func() {
		s.mu.Lock()
		delete(s.blobWrites, key)
		s.mu.Unlock()
	}, nil
}

// blobFor reads key's BlobMeta afresh, bounded by ctx, and checks that the
// caller may take act on it. For a create the key must be free (nil meta,
// version -1).
func (s *service) blobFor(ctx context.Context, key string, act auth.Action, create bool) (*clusterv1.BlobMeta, int32, error) {
	m, version, err := s.sess.ReadFor(ctx).Blob(key)
	switch {
	case create && errors.Is(err, cluster.ErrNoNode):
		return nil, -1, nil
	case create && err == nil:
		return nil, 0, fmt.Errorf("%w: %q", apierr.ErrBlobExists, key)
	case errors.Is(err, cluster.ErrNoNode):
		return nil, 0, fmt.Errorf("%w: %q", apierr.ErrBlobNotFound, key)
	case err != nil:
		return nil, 0, err
	}
	if err := s.authz.Blob(ctx, act, blobstore.Target(key, m, act)); err != nil {
		return nil, 0, err
	}
	return m, version, nil
}

// newBlobMeta is the meta the write will commit, less the version's
// content (fillVersion): a create's owner, ACL and replication factor, or
// an update's kept from prev.
func (s *service) newBlobMeta(ctx context.Context, h *nimbusv1.BlobHeader, prev *clusterv1.BlobMeta, term *leader.Term) (*clusterv1.BlobMeta, error) {
	if prev != nil {
		m := blobstore.NewVersion(prev, nil, &clusterv1.CodeFile{}, term.Epoch(), time.Now())
		return m, nil
	}
	owner, err := s.authz.Owner(ctx, "")
	if err != nil {
		return nil, err
	}
	acl, err := blobstore.NewACL("header.acl", h.GetAcl(), owner)
	if err != nil {
		return nil, err
	}
	factor := int32(s.cfg.BlobstoreReplication)
	if h.ReplicationFactor != nil {
		factor = h.GetReplicationFactor()
	}
	now := time.Now().UnixMilli()
	return &clusterv1.BlobMeta{Owner: owner, Acl: acl, ReplicationFactor: factor, CreatedUnixMs: now, Epoch: term.Epoch()}, nil
}

// fillVersion sets the version's content in m.
func fillVersion(m *clusterv1.BlobMeta, digest []byte, content *clusterv1.CodeFile, now time.Time) {
	m.CodeMetaDigest, m.ContentSha256, m.Size = digest, content.GetSha256(), content.GetSize()
	m.UpdatedUnixMs = now.UnixMilli()
	if m.Version == 0 {
		m.Version = 1
	}
}

// receiveBlob admits the upload and writes the content into a new
// temporary directory of the blob store, which the caller removes.
func (s *service) receiveBlob(h *nimbusv1.BlobHeader, next func() (uploadPart, error), maxBytes int64) (string, *clusterv1.CodeFile, error) {
	done, err := s.admitUpload(h.GetSize(), 0) // its maximum checked with the header
	if err != nil {
		return "", nil, err
	}
	defer done()
	tmp, err := s.blobStore.NewTemp()
	if err != nil {
		return "", nil, s.storeFailed(err)
	}
	content, err := receiveContent(next, filepath.Join(tmp, blobstore.File), contentRules{
		file: blobstore.File, what: "blob", max: maxBytes, maxKey: configs.KeyBlobMaxBytes,
		declared: h.GetSize(), declaredField: "header.size", allowEmpty: true,
	})
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, s.storeFailed(err)
	}
	return tmp, content, nil
}

// commitBlob writes the new meta, fenced: a create of the node, or a set
// at the version read. A change meanwhile (another leader's write) fails
// it with nothing written.
func (s *service) commitBlob(ctx context.Context, term *leader.Term, key string, m *clusterv1.BlobMeta, version int32, create bool) error {
	op := s.sess.Ops().SetBlob(key, m, version)
	if create {
		op = s.sess.Ops().CreateBlob(key, m)
	}
	_, err := term.MultiCtx(ctx, op)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNodeExists):
		return fmt.Errorf("%w: %q", apierr.ErrBlobExists, key)
	case errors.Is(err, cluster.ErrNoNode):
		return fmt.Errorf("%w: %q was deleted meanwhile", apierr.ErrBlobNotFound, key)
	case errors.Is(err, cluster.ErrBadVersion):
		return apierr.NotCommitted(fmt.Errorf("blob %q changed meanwhile; nothing was written, try again", key))
	case errors.Is(err, leader.ErrFenced), errors.Is(err, cluster.ErrUnavailable):
		return apierr.NotCommitted(err)
	case errors.Is(err, cluster.ErrOutcomeUnknown):
		return s.settleBlobCommit(key, m.GetCodeMetaDigest(), err)
	}
	return err
}

// settleBlobCommit decides a commit whose answer was lost: it reads the
// blob again, waiting for ZooKeeper for up to two session timeouts, and
// returns nil if the write applied (the caller installs and answers as
// for any commit: the new version must not lose its only copy), an error
// saying nothing was written if it did not, and cause when it cannot tell.
func (s *service) settleBlobCommit(key string, digest []byte, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.ZKSessionTimeout)
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		m, _, err := s.sess.ReadFor(ctx).Blob(key)
		switch {
		case err == nil && bytes.Equal(m.GetCodeMetaDigest(), digest):
			return nil
		case err == nil, errors.Is(err, cluster.ErrNoNode):
			return apierr.NotCommitted(fmt.Errorf("blob %q: the write was not applied (its answer was lost); nothing was written, try again", key))
		}
		select {
		case <-ctx.Done():
			return cause
		case <-time.After(backoff):
			backoff = min(2*backoff, 2*time.Second)
		}
	}
}

// undoBlob puts the blob back as it was when this nimbus committed a
// version it then failed to install (a disk that failed between the two):
// an acknowledged write must have a copy somewhere. It returns the error
// to answer.
func (s *service) undoBlob(ctx context.Context, term *leader.Term, key string, prev *clusterv1.BlobMeta, version int32, create bool, cause error) error {
	var ops []cluster.Op
	if create {
		ops = s.sess.Ops().DeleteBlob(key, 0, nil)
	} else {
		ops = []cluster.Op{s.sess.Ops().SetBlob(key, prev, version+1)}
	}
	if _, err := term.MultiCtx(ctx, ops...); err != nil {
		s.log.Error("a blob version committed but not installed could not be undone; its nimbuses fetch it from the backend if it has a copy",
			"key", key, "install_err", cause, "undo_err", err)
		return fmt.Errorf("%w: blob %q: installing the new version failed (%v) and undoing it failed (%v)", apierr.ErrOutcomeUnknown, key, cause, err)
	}
	if isStoreFailure(s.blobStore.WriteError(cause)) {
		return s.storeFailed(cause)
	}
	return apierr.NotCommitted(fmt.Errorf("blob %q: installing the new version failed: %v; nothing was written", key, cause))
}

// cleanupBlobBackend removes what the backend keeps of key's versions
// other than keep's (nil keep: all), on no request's behalf: a failure is
// logged, and the next write or delete cleans up again.
func (s *service) cleanupBlobBackend(key string, keep *clusterv1.BlobMeta) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var meta *clusterv1.CodeMeta
	if keep != nil {
		_, m, digest, err := s.blobStore.Meta(key)
		if err != nil || !bytes.Equal(digest, keep.GetCodeMetaDigest()) {
			return // not installed here: do not guess which version to keep
		}
		meta = m
	}
	if err := s.dist.CleanupBlob(ctx, key, meta); err != nil {
		s.log.Warn("cannot clean up a blob's older versions in the backend", "key", key, "err", err)
	}
}
