package nimbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// maxChunk is the largest artifact chunk a client may send.
const maxChunk = 1 << 20

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
// that the leader loop does not remove.
//
// A client that sends nothing for nimbus.upload.idle.timeout.secs while a
// message is awaited (the spec, a chunk, the trailer) ends its submission:
// DEADLINE_EXCEEDED, its name, upload slot and temporary files freed.
func (s *service) submit(stream nimbusv1.NimbusService_SubmitTopologyServer) (*nimbusv1.SubmitTopologyResponse, error) {
	ctx := stream.Context()
	idle := newIdleStream(stream, s.cfg.NimbusUploadIdleTimeout)
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
	// 4. The bundle: the artifact, hashed as it streams in, and the spec,
	// once an upload slot and room in the store are free.
	tmp, files, err := s.receiveBundle(stream, spec)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // a no-op once installed
	// 5. An id. The submission is pending from here until the commit: the
	// leader loop removes the distribution of any submission that is not.
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

// receiveSpec reads and validates the spec, the stream's first message.
func receiveSpec(stream nimbusv1.NimbusService_SubmitTopologyServer) (*nimbusv1.TopologySpec, error) {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return nil, validate.Invalid("spec", "the stream ended before the spec")
	}
	if err != nil {
		return nil, err
	}
	spec := first.GetSpec()
	if spec == nil {
		return nil, validate.Invalid("spec", "the first message must be the spec")
	}
	if err := validate.Spec(spec); err != nil {
		return nil, err
	}
	// The conf's topology.workers gives the count when num_workers is 0;
	// the stored spec and the StormBase carry it from here.
	spec.NumWorkers = validate.NumWorkers(spec)
	return spec, nil
}

// receiveBundle writes the bundle into a new temporary directory of the
// store, which the caller removes: the artifact as it streams in, checked
// against the trailer, and the spec. It returns the directory and the
// bundle's files, the artifact first. It reads no chunk until admitUpload
// lets the upload in, and frees the upload's slot when it returns.
func (s *service) receiveBundle(stream nimbusv1.NimbusService_SubmitTopologyServer, spec *nimbusv1.TopologySpec) (string, []*clusterv1.CodeFile, error) {
	specData := cluster.Encode(spec)
	done, err := s.admitUpload(spec.GetArtifactBytes(), int64(len(specData)))
	if err != nil {
		return "", nil, err
	}
	defer done()
	tmp, err := s.store.NewTemp()
	if err != nil {
		return "", nil, s.storeFailed(err)
	}
	artifact, err := s.receiveArtifactOf(stream, filepath.Join(tmp, codedistributor.ArtifactFile), spec.GetArtifactBytes())
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, s.storeFailed(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, codedistributor.SpecFile), specData, 0o644); err != nil {
		os.RemoveAll(tmp)
		return "", nil, s.storeFailed(err)
	}
	specSum := sha256.Sum256(specData)
	return tmp, []*clusterv1.CodeFile{artifact,
		{Name: codedistributor.SpecFile, Size: int64(len(specData)), Sha256: specSum[:]}}, nil
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
		// leader loop removes it once this submission is no longer
		// pending, so ABORTED stays true.
		s.cleanupBackend(id, log)
		return 0, false, apierr.NotCommitted(err)
	}
	return s.waitReplication(ctx, term, id, digest, settingsOf(s.cfg, spec.GetConfig()))
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
		// leave the distribution to the leader loop, which checks.
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

// receiveArtifact is receiveArtifactOf an artifact whose size was not
// declared.
func (s *service) receiveArtifact(stream nimbusv1.NimbusService_SubmitTopologyServer, path string) (*clusterv1.CodeFile, error) {
	return s.receiveArtifactOf(stream, path, 0)
}

// receiveArtifactOf writes the artifact chunks to path, hashing as it goes,
// and checks the trailer and, if declared is not 0, that exactly declared
// bytes arrived (spec.artifact_bytes). Every failure of the stream is the
// client's, named by field; a failure to write is returned as it is.
func (s *service) receiveArtifactOf(stream nimbusv1.NimbusService_SubmitTopologyServer, path string, declared int64) (*clusterv1.CodeFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	var size int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, validate.Invalid("trailer", "the stream ended after %d artifact bytes without the trailer", size)
		}
		if err != nil {
			return nil, err // the client went away: status from the transport
		}
		switch part := msg.GetPart().(type) {
		case *nimbusv1.SubmitTopologyRequest_Chunk:
			if len(part.Chunk) > maxChunk {
				return nil, validate.Invalid("chunk", "%d bytes; chunks are at most %d", len(part.Chunk), maxChunk)
			}
			if size += int64(len(part.Chunk)); size > s.cfg.NimbusMaxArtifactBytes {
				return nil, validate.Invalid("artifact", "larger than nimbus.max.artifact.bytes (%d)", s.cfg.NimbusMaxArtifactBytes)
			}
			if declared > 0 && size > declared {
				return nil, validate.Invalid("artifact", "more than the %d bytes spec.artifact_bytes declared", declared)
			}
			h.Write(part.Chunk)
			if _, err := f.Write(part.Chunk); err != nil {
				return nil, err
			}
		case *nimbusv1.SubmitTopologyRequest_Trailer:
			sum := h.Sum(nil)
			if want := part.Trailer.GetSha256(); !bytes.Equal(sum, want) {
				return nil, validate.Invalid("trailer.sha256", "the artifact received (%d bytes) has SHA-256 %s, the trailer says %s",
					size, codedistributor.Hex(sum), codedistributor.Hex(want))
			}
			if size == 0 {
				return nil, validate.Invalid("artifact", "empty")
			}
			if declared > 0 && size != declared {
				return nil, validate.Invalid("spec.artifact_bytes", "declared %d bytes, but %d arrived", declared, size)
			}
			return &clusterv1.CodeFile{Name: codedistributor.ArtifactFile, Size: size, Sha256: sum}, f.Close()
		default:
			return nil, validate.Invalid("spec", "sent twice, or an empty message, after the artifact started")
		}
	}
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
func (s *service) waitReplication(clientCtx context.Context, term *leader.Term, id string, digest []byte, set topologySettings) (count int, timedOut bool, err error) {
	ctx, cancel := context.WithCancel(clientCtx)
	defer cancel()
	stop := context.AfterFunc(term.Context(), cancel)
	defer stop()
	var until time.Time // topology.max.replication.wait.time.sec
	if !set.waitForever {
		until = time.Now().Add(set.maxReplicationWait)
	}
	count, timedOut, err = s.view.Replicas.AwaitReplicas(ctx, id, digest, set.minReplication, until)
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

// cleanupBackend removes what the backend stored for a submission that
// failed before it had a distribution.
func (s *service) cleanupBackend(id string, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.dist.Cleanup(ctx, id); err != nil {
		log.Warn("cannot clean up the code of a failed submission", "err", err)
	}
}

// storeHeadroom is what an upload leaves free in the store's filesystem
// beyond its bundle: room for meta.pb and the directories' blocks, and for
// the filesystem's other writers (codesync's fetches, logs), so that
// accepting an upload never fills the disk to its last block. A store
// that failed is writable again only with this much free (probeStore).
const storeHeadroom = 4 << 20

// uploadGate admits the uploads of this nimbus's submissions (admitUpload).
type uploadGate struct {
	slots    chan struct{} // one per upload under way: nimbus.max.concurrent.uploads
	health   *storeHealth  // whether the store can be written
	mu       sync.Mutex
	reserved int64 // declared artifact bytes of the uploads under way
}

func newUploadGate(maxUploads int, health *storeHealth) *uploadGate {
	return &uploadGate{slots: make(chan struct{}, maxUploads), health: health}
}

// admitUpload lets an upload of declared artifact bytes (0: not declared)
// and a spec.pb of specBytes in, or says why not, before any chunk is
// read: the store failed and no probe has passed since (its error), the
// artifact is over nimbus.max.artifact.bytes (INVALID_ARGUMENT), too many
// uploads are under way (nimbus.max.concurrent.uploads:
// RESOURCE_EXHAUSTED), the store's filesystem has less than storeHeadroom
// free (the store fails, as if a write had: RESOURCE_EXHAUSTED), or it
// lacks room for this upload and storeHeadroom, counting the declared
// bytes of the uploads under way as used (RESOURCE_EXHAUSTED; the store is
// fine). done frees the slot and the reserved room.
func (s *service) admitUpload(declared, specBytes int64) (done func(), err error) {
	g := s.uploads
	if _, err := g.health.state(); err != nil {
		return nil, notStored(fmt.Errorf("the code store failed a write and has not passed a probe since: %w", err))
	}
	if declared > s.cfg.NimbusMaxArtifactBytes {
		return nil, validate.Invalid("spec.artifact_bytes", "%d bytes, larger than nimbus.max.artifact.bytes (%d)", declared, s.cfg.NimbusMaxArtifactBytes)
	}
	select {
	case g.slots <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: %d submissions are uploading to this nimbus already (%s); nothing was stored, try again later",
			apierr.ErrResourceExhausted, cap(g.slots), configs.KeyNimbusMaxUploads)
	}
	free, err := s.store.Free()
	if err == nil {
		err = lowOnSpace(s.store, free)
	}
	switch {
	case isStoreFailure(err): // full or read-only: every upload would fail
		<-g.slots
		return nil, s.storeFailed(err)
	case err != nil:
		<-g.slots
		return nil, fmt.Errorf("%w: %v; nothing was stored", apierr.ErrCodeStoreUnavailable, err)
	}
	need := declared + specBytes + storeHeadroom
	g.mu.Lock()
	defer g.mu.Unlock()
	if free-g.reserved < need {
		<-g.slots
		return nil, fmt.Errorf("%w: the code store %s has %d bytes free, %d of them promised to uploads under way; "+
			"this one needs %d (%d of artifact, %d of spec, %d kept free); nothing was stored",
			apierr.ErrResourceExhausted, s.store.Root(), free, g.reserved, need, declared, specBytes, storeHeadroom)
	}
	g.reserved += declared
	return func() {
		g.mu.Lock()
		g.reserved -= declared
		g.mu.Unlock()
		<-g.slots
	}, nil
}

// storeFailed classifies a failed write to the store
// (codedistributor.Store.WriteError). A full or read-only filesystem marks
// the store failed (health NOT_SERVING until a probe passes) and answers
// as notStored says; any other error is returned as it is.
func (s *service) storeFailed(err error) error {
	err = s.store.WriteError(err)
	if !isStoreFailure(err) {
		return err
	}
	return notStored(s.uploads.health.failed(err, s.log))
}

// isStoreFailure reports whether err, classified by
// codedistributor.Store.WriteError, is a full or read-only store.
func isStoreFailure(err error) bool {
	return errors.Is(err, codedistributor.ErrStoreFull) || errors.Is(err, codedistributor.ErrStoreReadOnly)
}

// notStored is the answer to a store that cannot be written (err, as
// isStoreFailure sees it): a full one is RESOURCE_EXHAUSTED, a read-only
// one UNAVAILABLE; either way nothing was stored.
func notStored(err error) error {
	if errors.Is(err, codedistributor.ErrStoreFull) {
		return fmt.Errorf("%w: %v; nothing was stored", apierr.ErrResourceExhausted, err)
	}
	return fmt.Errorf("%w: %v; nothing was stored", apierr.ErrCodeStoreUnavailable, err)
}

// idleStream is a submission's stream whose Recv gives up when the client
// sends nothing for idle. A server stream's Recv cannot be interrupted, so
// one goroutine receives, a message at a time when Recv asks for one; after
// a timeout the handler returns, gRPC cancels the stream, and that
// goroutine's Recv fails and it exits.
type idleStream struct {
	nimbusv1.NimbusService_SubmitTopologyServer
	idle time.Duration
	ask  chan struct{}
	got  chan received
	done chan struct{} // closed by close
	err  error         // the first failure, returned by every later Recv
}

type received struct {
	msg *nimbusv1.SubmitTopologyRequest
	err error
}

// newIdleStream wraps stream; the caller must close it when the handler
// returns.
func newIdleStream(stream nimbusv1.NimbusService_SubmitTopologyServer, idle time.Duration) *idleStream {
	s := &idleStream{NimbusService_SubmitTopologyServer: stream, idle: idle,
		ask: make(chan struct{}), got: make(chan received), done: make(chan struct{})}
	go s.receive()
	return s
}

// receive runs Recv on the underlying stream for each ask, until one fails
// or the handler is done.
func (s *idleStream) receive() {
	for {
		select {
		case <-s.ask:
		case <-s.done:
			return
		}
		msg, err := s.NimbusService_SubmitTopologyServer.Recv()
		select {
		case s.got <- received{msg, err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Recv returns the client's next message, or an error wrapping
// context.DeadlineExceeded if none arrived within idle.
func (s *idleStream) Recv() (*nimbusv1.SubmitTopologyRequest, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.ask <- struct{}{} // receive waits for it: every earlier ask was answered
	timer := time.NewTimer(s.idle)
	defer timer.Stop()
	select {
	case r := <-s.got:
		s.err = r.err
		return r.msg, r.err
	case <-timer.C:
		s.err = fmt.Errorf("%w: no message from the client for %v (%s): the submission is cancelled and nothing was stored",
			context.DeadlineExceeded, s.idle, configs.KeyNimbusUploadIdleTimeout)
		return nil, s.err
	}
}

// close ends the receiving goroutine (at once, or when the stream ends).
func (s *idleStream) close() { close(s.done) }
