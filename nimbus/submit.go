package nimbus

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// SubmitTopology stores a topology's code, has every nimbus fetch it, waits
// for topology.min.replication.count replicas (at most
// topology.max.replication.wait.time.sec), and only then commits the
// topology to /storms. Until that commit nothing is acknowledged, and a
// failure leaves nothing behind that a later leader does not remove.
func (s *service) SubmitTopology(stream nimbusv1.NimbusService_SubmitTopologyServer) error {
	resp, err := s.submit(stream)
	if err != nil {
		return apistatus.ToStatus(err)
	}
	return stream.SendAndClose(resp)
}

// submit is SubmitTopology as a list of steps. Until step 8 commits the
// topology nothing is acknowledged, and a failure before it answers
// ABORTED (nothing committed: submitting again is safe) and leaves nothing
// that the leader's cleanup (nimbus/leading) does not remove.
//
// A client that sends nothing for nimbus.upload.idle.timeout.secs while a
// message is awaited (the spec, a chunk, the trailer) ends its submission:
// DEADLINE_EXCEEDED, its name, upload slot and temporary files freed.
func (s *service) submit(stream nimbusv1.NimbusService_SubmitTopologyServer) (*nimbusv1.SubmitTopologyResponse, error) {
	ctx := stream.Context()
	idle := newIdleStream(stream, s.config().NimbusUploadIdleTimeout)
	defer idle.close()
	stream = idle
	// 1. The spec, validated before anything else, owned by the caller
	// (with authentication on, the principal of its certificate, whatever
	// the spec says), and what it would have the leader write to ZooKeeper
	// checked against the node size ZooKeeper accepts.
	spec, err := receiveSpec(stream)
	if err != nil {
		return nil, err
	}
	if spec.Owner, err = s.authz.Owner(ctx, spec.GetOwner()); err != nil {
		return nil, err
	}
	if err := s.zkBudget().Check("spec.components", topology.NewStormBase(spec, make([]byte, sha256.Size), 0, time.Now())); err != nil {
		return nil, err
	}
	// 2. Leadership, before the upload: a client sent to a follower is
	// redirected before it sends megabytes.
	term, err := s.leaderTerm(ctx)
	if errors.Is(err, apierr.ErrNoLeader) {
		// The client cannot tell how much of its upload arrived; say that
		// nothing was committed, so it submits again.
		return nil, apierr.NotCommitted(err)
	}
	if err != nil {
		return nil, err
	}
	// 3. The name, held until the answer.
	release, err := s.reserveName(spec.GetName())
	if err != nil {
		return nil, err
	}
	defer release()
	// The blobs its topology.blobstore.map names exist and the submitter
	// may read them; they are held against a delete until the answer.
	releaseBlobs, err := s.checkBlobUses(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer releaseBlobs()
	// 4. The bundle: the artifact, hashed as it streams in, and the spec,
	// once an upload slot and room in the store are free.
	tmp, files, err := s.receiveBundle(stream, spec)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // a no-op once installed
	// 5. An id. The submission is pending from here until the commit: the
	// leader's cleanup (nimbus/leading) removes the distribution of any
	// submission that is not.
	id, err := s.newTopologyID(ctx, spec.GetName())
	if err != nil {
		return nil, apierr.NotCommitted(err)
	}
	log := s.log.With("topology", id)
	s.setPending(id, true)
	defer func() {
		s.setPending(id, false)
		s.actionsChanged() // collect the distribution if this failed
	}()
	// 6. The code stored by the backend, then installed here, pinned until
	// the distribution asks every nimbus to hold it.
	unpin := s.syncer.Pin(id)
	defer unpin()
	digest, err := s.storeCode(ctx, id, tmp, files, log)
	if err != nil {
		return nil, err
	}
	// 7. Distributed: every nimbus fetches it; the answer waits for
	// topology.min.replication.count of them.
	count, timedOut, err := s.distribute(ctx, term, spec, id, digest, log)
	if err != nil {
		return nil, err
	}
	// 8. Committed: from here the topology exists.
	if err := s.commit(ctx, term, spec, id, digest); err != nil {
		return nil, err
	}
	s.awaitCached(ctx, term, id)
	log.Info("topology submitted", "name", spec.GetName(), "bytes", files[0].GetSize(),
		"replicas", count, "replication_wait_timed_out", timedOut)
	return &nimbusv1.SubmitTopologyResponse{TopologyId: id, ReplicationCount: int32(count), ReplicationWaitTimedOut: timedOut}, nil
}

// storeCode has the backend store the bundle in tmp, then installs it in
// this nimbus's store, and returns its meta's digest. A failure cleans up
// what the backend stored.
func (s *service) storeCode(ctx context.Context, id, tmp string, files []*clusterv1.CodeFile, log *slog.Logger) ([]byte, error) {
	meta, err := s.dist.Upload(ctx, tmp, codedistributor.Code{TopologyID: id, Meta: &clusterv1.CodeMeta{TopologyId: id, Files: files}})
	if err != nil {
		s.cleanupBackend(id, log)
		if isStoreFailure(s.store.WriteError(err)) { // a backend that writes here
			return nil, s.storeFailed(err)
		}
		return nil, fmt.Errorf("%w: nothing was submitted: %v", apierr.ErrCodeStoreUnavailable, err)
	}
	digest, err := s.store.Install(tmp, id, meta)
	if err != nil {
		s.cleanupBackend(id, log)
		if isStoreFailure(s.store.WriteError(err)) {
			return nil, s.storeFailed(err) // not ABORTED: submitting again would fail again
		}
		return nil, apierr.NotCommitted(err)
	}
	return digest, nil
}

// distribute asks every nimbus to fetch the code (codesync registers this
// one as a replica too), and waits for the replicas; see waitReplication.
func (s *service) distribute(ctx context.Context, term *leader.Term, spec *nimbusv1.TopologySpec, id string, digest []byte, log *slog.Logger) (count int, timedOut bool, err error) {
	dist := &clusterv1.CodeDistribution{CodeMetaDigest: digest, Epoch: term.Epoch(), CreatedUnixMs: time.Now().UnixMilli()}
	if _, err := term.MultiCtx(ctx, s.sess.Ops().CreateDistribution(id, dist)); err != nil {
		// Nothing in ZooKeeper will lead anyone to the stored code. A
		// create ZooKeeper did not answer in time may still apply; the
		// leader's cleanup (nimbus/leading) removes it once this submission
		// is no longer pending, so ABORTED stays true.
		s.cleanupBackend(id, log)
		return 0, false, apierr.NotCommitted(err)
	}
	return s.waitReplication(ctx, term, s.view.Replicas.AwaitReplicas, id, digest, settingsOf(s.cfg, spec.GetConfig()))
}

// commit writes the topology's StormBase, once no topology has its name.
// Both are bounded by ctx's deadline.
func (s *service) commit(ctx context.Context, term *leader.Term, spec *nimbusv1.TopologySpec, id string, digest []byte) error {
	if err := s.checkNameFree(ctx, spec.GetName()); err != nil {
		return err
	}
	base := topology.NewStormBase(spec, digest, term.Epoch(), time.Now())
	if _, err := term.MultiCtx(ctx, s.sess.Ops().CreateStorm(id, base)); err != nil {
		// Fenced, or never sent (no session, ZooKeeper slow): surely not
		// committed.
		if errors.Is(err, leader.ErrFenced) || errors.Is(err, cluster.ErrUnavailable) {
			return apierr.NotCommitted(err)
		}
		// The commit may have been applied (a lost answer): say so, and
		// leave the distribution to the leader's cleanup (nimbus/leading),
		// which checks.
		return fmt.Errorf("nimbus: commit of %s: outcome unknown (check with GetTopologyInfo): %w", id, err)
	}
	return nil
}

// awaitCached waits until this nimbus's cache shows the new topology, so a
// client reading from the leader right after the answer sees what it
// submitted (read-your-writes), within the client's deadline and while
// the term lasts. Other nimbuses follow within a watch round trip.
func (s *service) awaitCached(ctx context.Context, term *leader.Term, id string) {
	if !s.view.Storms.AwaitChild(ctx, term.Done(), id) {
		s.log.Info("answering before the cache shows the submission", "topology", id)
	}
}

// reserveName fails if a topology with that name exists or is being
// submitted, and holds the name until release.
func (s *service) reserveName(name string) (release func(), err error) {
	if _, _, err := s.view.ByName(name); err == nil {
		return nil, fmt.Errorf("%w: %q", apierr.ErrAlreadyExists, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[name] {
		return nil, fmt.Errorf("%w: %q is being submitted", apierr.ErrAlreadyExists, name)
	}
	s.inFlight[name] = true
	return func() {
		s.mu.Lock()
		delete(s.inFlight, name)
		s.mu.Unlock()
	}, nil
}

// checkNameFree checks, against a fresh read of /storms, that no topology
// has the name: a new leader's cache can lag the writes of the last one.
// Topology ids begin with the name, so the listing suffices. The read is
// bounded by ctx's deadline.
func (s *service) checkNameFree(ctx context.Context, name string) error {
	ids, err := s.sess.ReadFor(ctx).StormIDs()
	if err != nil {
		return apierr.NotCommitted(err)
	}
	for _, id := range ids {
		if n, _, _, err := validate.SplitTopologyID("id", id); err == nil && n == name {
			return fmt.Errorf("%w: %q", apierr.ErrAlreadyExists, name)
		}
	}
	return nil
}

func (s *service) setPending(id string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.pending[id] = true
	} else {
		delete(s.pending, id)
	}
}

// isPending reports whether id is a submission in progress here.
func (s *service) isPending(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[id]
}

// newTopologyID builds <name>-<counter>-<launch-secs>. The counter is the
// child version of /code-distributor, which every submission's distribution
// bumps (committed or not) and only the leader changes: unique across
// leaders without a counter node. The read is bounded by ctx's deadline.
func (s *service) newTopologyID(ctx context.Context, name string) (string, error) {
	counter, err := s.sess.ReadFor(ctx).DistributionCounter()
	if err != nil {
		return "", err
	}
	return validate.NewTopologyID(name, counter+1, time.Now()), nil
}

// waitReplication waits for the topology's minimum replication within its
// maximum wait (its conf's, else the nimbus's: settingsOf). It fails only
// when the wait cannot go on: the term ended (not committed; a retry is
// safe) or the client left.
func (s *service) waitReplication(clientCtx context.Context, term *leader.Term, await awaitReplicas, id string, digest []byte, set topologySettings) (count int, timedOut bool, err error) {
	ctx, cancel := context.WithCancel(clientCtx)
	defer cancel()
	stop := context.AfterFunc(term.Context(), cancel)
	defer stop()
	var until time.Time // topology.max.replication.wait.time.sec
	if !set.waitForever {
		until = time.Now().Add(set.maxReplicationWait)
	}
	count, timedOut, err = await(ctx, id, digest, set.minReplication, until)
	switch {
	case err == nil:
		return count, timedOut, nil
	case term.Context().Err() != nil:
		return count, false, fmt.Errorf("%w: leadership lost while waiting for replication (%d of %d)", apierr.ErrNotCommitted, count, set.minReplication)
	case clientCtx.Err() != nil:
		// The client left or its deadline passed: nobody to acknowledge.
		return count, false, clientCtx.Err()
	default:
		return count, false, apierr.NotCommitted(err)
	}
}

// awaitReplicas is a replica cache's wait (cluster.ReplicaSet.AwaitReplicas):
// of topology code, or of blobs.
type awaitReplicas func(ctx context.Context, id string, digest []byte, min int, until time.Time) (int, bool, error)

// cleanupBackend removes what the backend stored for a submission that
// failed before it had a distribution.
func (s *service) cleanupBackend(id string, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.dist.Cleanup(ctx, id); err != nil {
		log.Warn("cannot clean up the code of a failed submission", "err", err)
	}
}
