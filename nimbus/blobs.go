package nimbus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The blob RPCs that change a blob's standing (delete, set-meta), what
// topologies use, and the leader's sweep of what backends keep
// (docs/ARCHITECTURE.md section 24); writes are in blobwrite.go, reads in
// blobread.go.

// sweepStoredBlobs tidies what the backend keeps of blobs, for the
// leader's cleanup duty (ctx is its term): of a key no blob has, all (an
// upload whose commit failed, or whose leader died); of one that exists,
// every version but the current, when this nimbus holds it to name it. A
// key being written here is left for the next sweep; the reservation
// keeps a write from starting meanwhile.
func (s *service) sweepStoredBlobs(ctx context.Context) {
	lister, ok := s.dist.(codedistributor.BlobLister)
	if !ok {
		return
	}
	keys, err := lister.ListBlobs(ctx)
	if err != nil {
		s.log.Warn("cannot list stored blobs", "err", err)
		return
	}
	for key, versions := range keys {
		release, err := s.reserveBlob(key)
		if err != nil {
			continue
		}
		m, _, err := s.sess.Read().Blob(key)
		switch {
		case errors.Is(err, cluster.ErrNoNode):
			if err := s.dist.CleanupBlob(ctx, key, nil); err != nil {
				s.log.Warn("cannot remove an orphaned stored blob", "key", key, "err", err)
			} else {
				s.log.Info("removed a stored blob no key names", "key", key)
			}
		case err == nil && len(versions) > 1 && ctx.Err() == nil:
			s.cleanupBlobBackend(key, m)
		}
		release()
	}
}

func (s *service) DeleteBlob(ctx context.Context, req *nimbusv1.DeleteBlobRequest) (*nimbusv1.DeleteBlobResponse, error) {
	if err := validate.DeleteBlob(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	if err := s.deleteBlob(ctx, req.GetKey()); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return &nimbusv1.DeleteBlobResponse{}, nil
}

// deleteBlob removes the blob and its replica nodes in one fenced multi,
// unless a live topology (or a submission in flight here) uses it.
func (s *service) deleteBlob(ctx context.Context, key string) error {
	term, err := s.leaderTerm(ctx)
	if err != nil {
		return err
	}
	release, err := s.reserveBlob(key)
	if err != nil {
		return err
	}
	defer release()
	// From here a submission that names key is refused (checkBlobUses),
	// and one already checking it is among the users below.
	s.mu.Lock()
	s.blobDeletes[key] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.blobDeletes, key)
		s.mu.Unlock()
	}()
	for range 3 {
		m, version, err := s.blobFor(ctx, key, auth.ActionWriteBlob, false)
		if err != nil {
			return err
		}
		users, err := s.blobUsers(ctx, key, true)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("%w: %q is used by %v (their topology.blobstore.map); kill them first", apierr.ErrBlobInUse, key, users)
		}
		replicas, err := s.sess.ReadFor(ctx).BlobReplicas(key)
		if err != nil && !errors.Is(err, cluster.ErrNoNode) {
			return err
		}
		_, err = term.MultiCtx(ctx, s.sess.Ops().DeleteBlob(key, version, slices.Collect(maps.Keys(replicas)))...)
		switch {
		case err == nil:
			s.cleanupBlobBackend(key, nil)
			s.log.Info("blob deleted", "key", key, "version", m.GetVersion(), "by", auth.Who(ctx))
			return nil
		case errors.Is(err, cluster.ErrNoNode):
			return fmt.Errorf("%w: %q was deleted meanwhile", apierr.ErrBlobNotFound, key)
		case errors.Is(err, cluster.ErrBadVersion), errors.Is(err, cluster.ErrNotEmpty):
			continue // updated, or a nimbus registered a replica: read again
		case errors.Is(err, leader.ErrFenced), errors.Is(err, cluster.ErrUnavailable):
			return apierr.NotCommitted(err)
		default:
			return err
		}
	}
	return apierr.NotCommitted(fmt.Errorf("blob %q changed three times during the delete; try again", key))
}

func (s *service) SetBlobMeta(ctx context.Context, req *nimbusv1.SetBlobMetaRequest) (*nimbusv1.SetBlobMetaResponse, error) {
	if err := validate.SetBlobMeta(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	info, err := s.setBlobMeta(ctx, req)
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return &nimbusv1.SetBlobMetaResponse{Blob: info}, nil
}

// setBlobMeta changes the ACL and/or the replication factor, fenced, at
// the version read. A raised factor is not waited for: the nimbuses
// already fetch every blob.
func (s *service) setBlobMeta(ctx context.Context, req *nimbusv1.SetBlobMetaRequest) (*nimbusv1.BlobInfo, error) {
	term, err := s.leaderTerm(ctx)
	if err != nil {
		return nil, err
	}
	key := req.GetKey()
	release, err := s.reserveBlob(key)
	if err != nil {
		return nil, err
	}
	defer release()
	m, version, err := s.blobFor(ctx, key, auth.ActionAdminBlob, false)
	if err != nil {
		return nil, err
	}
	if req.GetSetAcl() {
		caller, _ := auth.FromContext(ctx)
		if m.Acl, err = blobstore.SetACL("acl", req.GetAcl(), caller); err != nil {
			return nil, err
		}
	}
	if req.ReplicationFactor != nil {
		m.ReplicationFactor = req.GetReplicationFactor()
	}
	m.Epoch = term.Epoch()
	if err := s.commitBlob(ctx, term, key, m, version, false); err != nil {
		return nil, err
	}
	s.log.Info("blob meta changed", "key", key, "acl", m.GetAcl(), "replication_factor", m.GetReplicationFactor(), "by", auth.Who(ctx))
	return blobstore.Info(key, m, s.blobs.Replicas(key)), nil
}

// blobUsers are the live topologies whose topology.blobstore.map names
// key, and the submissions in flight on this nimbus that do. The leader
// holds every live topology's spec (invariant 2). With fresh, for a
// delete, the topologies are listed afresh (a submission answered a moment
// ago may not be in the cache yet) and one whose spec this nimbus cannot
// read counts as a user; otherwise the cache answers.
func (s *service) blobUsers(ctx context.Context, key string, fresh bool) ([]string, error) {
	cached := s.view.Storms.Snapshot()
	ids := slices.Collect(maps.Keys(cached))
	if fresh {
		var err error
		if ids, err = s.sess.ReadFor(ctx).StormIDs(); err != nil {
			return nil, err
		}
	}
	var users []string
	for _, id := range ids {
		base, ok := cached[id]
		if !ok && fresh {
			if b, _, err := s.sess.ReadFor(ctx).Storm(id); err == nil {
				base = b
			}
		}
		if base == nil || base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
			continue
		}
		uses, held := s.blobUsesOf(id)
		switch _, named := uses[key]; {
		case named:
			users = append(users, id)
		case !held && fresh:
			users = append(users, id+" (its spec is not held here yet)")
		}
	}
	s.mu.Lock()
	for name, keys := range s.blobSubmits {
		if slices.Contains(keys, key) {
			users = append(users, name+" (being submitted)")
		}
	}
	for id := range s.blobUses { // ids are never reused: forget the gone
		if _, ok := cached[id]; !ok && !slices.Contains(ids, id) {
			delete(s.blobUses, id)
		}
	}
	s.mu.Unlock()
	sort.Strings(users)
	return users, nil
}

// blobUsesOf is topology id's topology.blobstore.map, read once from the
// spec stored with its code (ids are never reused); held is false while
// this nimbus cannot read the spec.
func (s *service) blobUsesOf(id string) (uses map[string]validate.BlobUse, held bool) {
	s.mu.Lock()
	uses, ok := s.blobUses[id]
	s.mu.Unlock()
	if ok {
		return uses, true
	}
	spec, err := s.storedSpec(id)()
	if err != nil {
		return nil, false // not held yet: not cached, asked again
	}
	if v, ok := spec.GetConfig()[validate.TopologyBlobstoreMap]; ok {
		uses, _ = validate.ParseBlobstoreMap(validate.TopologyBlobstoreMap, v) // checked at submit
	}
	s.mu.Lock()
	s.blobUses[id] = uses
	s.mu.Unlock()
	return uses, true
}

// checkBlobUses is a submission's check of its topology.blobstore.map:
// every blob exists and the submitter may read it. The keys are held
// against a delete until release.
func (s *service) checkBlobUses(ctx context.Context, spec *nimbusv1.TopologySpec) (release func(), err error) {
	value, ok := spec.GetConfig()[validate.TopologyBlobstoreMap]
	if !ok {
		return func() {}, nil
	}
	field := "spec.config[" + fmt.Sprintf("%q", validate.TopologyBlobstoreMap) + "]"
	uses, err := validate.ParseBlobstoreMap(field, value)
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(uses))
	name := spec.GetName()
	s.mu.Lock()
	for _, key := range keys {
		if s.blobDeletes[key] {
			s.mu.Unlock()
			return nil, apierr.NotCommitted(fmt.Errorf("blob %q is being deleted; nothing was submitted", key))
		}
	}
	s.blobSubmits[name] = keys
	s.mu.Unlock()
	release = func() {
		s.mu.Lock()
		delete(s.blobSubmits, name)
		s.mu.Unlock()
	}
	for _, key := range keys {
		f := field + "[" + fmt.Sprintf("%q", key) + "]"
		m, _, err := s.sess.ReadFor(ctx).Blob(key)
		if errors.Is(err, cluster.ErrNoNode) {
			release()
			return nil, validate.Invalid(f, "no blob has key %q: create it first (stormctl blobstore create)", key)
		}
		if err != nil {
			release()
			return nil, err
		}
		if !s.authz.May(ctx, auth.ActionReadBlob, blobstore.Target(key, m, auth.ActionReadBlob)) {
			release()
			return nil, validate.Invalid(f, "the submitter may not read blob %q", key)
		}
	}
	return release, nil
}
