package nimbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/clusterid"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codeservice"
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/topology"
	"github.com/nimbusha/nimbus/nimbus/view"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/stats"
	"github.com/nimbusha/nimbus/validate"
)

// service implements nimbus.v1.NimbusService. Handlers validate (package
// validate), call the domain code and end with apistatus.ToStatus; an RPC
// the proto declares and this nimbus does not implement answers
// Unimplemented through the embedded type.
type service struct {
	nimbusv1.UnimplementedNimbusServiceServer
	cfg      *configs.Config
	log      *slog.Logger
	self     string // host:port
	view     *view.View
	sess     *cluster.Session
	election *leader.Election
	authz    *auth.Authorizer // who may do what; allows everything without authentication
	store    *codedistributor.Store
	dist     codedistributor.Distributor
	syncer   *codesync.Syncer
	peers    *codedistributor.Peers // connections to other nodes' code ports, with this nimbus's TLS identity
	// actionsChanged wakes a round of the leader's duties after a kill, a
	// rebalance or a submission that ended.
	actionsChanged func()
	uploads        *uploadGate // admits submissions' uploads (admission.go)
	// live is the configuration a reload put in force (reload.go: config).
	live atomic.Pointer[configs.Config]

	memory    *clusterid.Memory // the cluster this nimbus belongs to
	restoring sync.Mutex        // one snapshot restored at a time (snapshot.go)

	// Blobs (blobs.go): this nimbus's blob store, /blobstore, and the
	// Syncer that keeps the first holding the second.
	blobStore *codedistributor.Store
	blobs     *cluster.BlobCache
	blobSync  *blobstore.Syncer

	mu          sync.Mutex
	inFlight    map[string]bool                        // names being submitted through this nimbus
	pending     map[string]bool                        // ids of those submissions, once they have one
	blobWrites  map[string]bool                        // blob keys being written through this nimbus
	blobDeletes map[string]bool                        // blob keys being deleted: submissions naming them are refused
	blobSubmits map[string][]string                    // submissions in flight here, by name: the blobs they use
	blobUses    map[string]map[string]validate.BlobUse // each topology's topology.blobstore.map, by id
}

func (s *service) GetLeader(context.Context, *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	resp, err := s.view.LeaderInfo()
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return resp, nil
}

func (s *service) GetClusterInfo(ctx context.Context, req *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	if err := validate.GetClusterInfo(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	if req.GetLinearizable() {
		if err := s.catchUp(ctx); err != nil {
			return nil, apistatus.ToStatus(err)
		}
	}
	resp, err := s.view.ClusterPart(req)
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return resp, nil
}

func (s *service) GetTopologyInfo(ctx context.Context, req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
	if err := validate.GetTopologyInfo(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	if req.GetLinearizable() {
		if err := s.catchUp(ctx); err != nil {
			return nil, apistatus.ToStatus(err)
		}
	}
	resp, err := s.view.TopologyInfo(req.GetName(), req.GetIncludeLogTail())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	window, _ := stats.ParseWindow(req.GetWindow()) // checked by validate
	resp.Stats = s.view.TopologyStats(resp.GetTopology().GetId(), window)
	if req.GetIncludeLogTail() {
		// What a worker printed is not redacted: it may hold what its conf
		// does, so it takes the right to read the conf.
		id, base := resp.GetTopology().GetId(), s.view.Storms.Snapshot()[resp.GetTopology().GetId()]
		if err := s.authorize(ctx, auth.ActionReadConf, id, base, s.storedSpec(id)); err != nil {
			return nil, apistatus.ToStatus(err)
		}
	}
	s.describeStorage(ctx, resp)
	return resp, nil
}

// describeStorageTimeout bounds asking the backend about stored code: the
// answer is extra detail, never worth a slow GetTopologyInfo.
const describeStorageTimeout = time.Second

// describeStorage adds what the backend says about the stored code, if it
// stores it elsewhere and answers in time.
func (s *service) describeStorage(ctx context.Context, resp *nimbusv1.GetTopologyInfoResponse) {
	d, ok := s.dist.(codedistributor.Describer)
	if !ok {
		return
	}
	_, meta, _, err := s.store.Meta(resp.GetTopology().GetId())
	if err != nil {
		return
	}
	ctx, cancel := cluster.WithinBudget(ctx, describeStorageTimeout) // the answer without it beats none at all
	defer cancel()
	done := make(chan map[string]string, 1)
	go func() {
		storage, err := d.Describe(ctx, meta)
		if err != nil {
			s.log.Debug("cannot describe stored code", "err", err)
		}
		done <- storage
	}()
	select {
	case resp.Storage = <-done:
	case <-ctx.Done():
	}
}

// termWait bounds how long a nimbus at the head of the queue waits for its
// own term to start (it checks its code first) before answering no leader.
const termWait = 2 * time.Second

// leaderTerm returns the live term, or what a follower answers with: the
// leader's address, or no leader.
func (s *service) leaderTerm(ctx context.Context) (*leader.Term, error) {
	if t := s.election.Current(); t != nil {
		return t, nil
	}
	head, _, ok := s.view.Leader()
	if ok && cluster.HostPort(head) != s.self {
		return nil, &apierr.NotLeaderError{Leader: cluster.HostPort(head)}
	}
	if ok { // this nimbus won the lock; its term is about to start
		ctx, cancel := cluster.WithinBudget(ctx, termWait) // answer no leader before the client's deadline
		defer cancel()
		if t, err := s.election.Await(ctx); err == nil {
			return t, nil
		}
	}
	// Nobody, or this nimbus while its term is suspended: retry shortly.
	return nil, apierr.ErrNoLeader
}

func (s *service) KillTopology(ctx context.Context, req *nimbusv1.KillTopologyRequest) (*nimbusv1.KillTopologyResponse, error) {
	if err := validate.Kill(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	var wait time.Duration
	err := s.transitionOf(ctx, req.GetName(), auth.ActionKill, func(id string, spec storedSpec) topology.Change {
		wait = s.actionWait(id, spec, req.WaitSecs)
		return topology.Kill(wait, time.Now)
	})
	if err == nil {
		s.log.Info("topology killed", "topology", req.GetName(), "removal_in", wait)
		s.actionsChanged()
	}
	return &nimbusv1.KillTopologyResponse{}, apistatus.ToStatus(err)
}

func (s *service) ActivateTopology(ctx context.Context, req *nimbusv1.ActivateTopologyRequest) (*nimbusv1.ActivateTopologyResponse, error) {
	if err := validate.Activate(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	err := s.transition(ctx, req.GetName(), auth.ActionActivate, topology.SetStatus(clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE))
	return &nimbusv1.ActivateTopologyResponse{}, apistatus.ToStatus(err)
}

func (s *service) DeactivateTopology(ctx context.Context, req *nimbusv1.DeactivateTopologyRequest) (*nimbusv1.DeactivateTopologyResponse, error) {
	if err := validate.Deactivate(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	err := s.transition(ctx, req.GetName(), auth.ActionDeactivate, topology.SetStatus(clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE))
	return &nimbusv1.DeactivateTopologyResponse{}, apistatus.ToStatus(err)
}

func (s *service) RebalanceTopology(ctx context.Context, req *nimbusv1.RebalanceTopologyRequest) (*nimbusv1.RebalanceTopologyResponse, error) {
	if err := validate.Rebalance(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	// The plan must leave a StormBase and an assignment ZooKeeper accepts.
	field := "component_parallelism"
	if len(req.GetComponentParallelism()) == 0 {
		field = "num_workers"
	}
	var wait time.Duration
	err := s.transitionOf(ctx, req.GetName(), auth.ActionRebalance, func(id string, spec storedSpec) topology.Change {
		wait = s.actionWait(id, spec, req.WaitSecs)
		return topology.WithinBudget(topology.Rebalance(req, wait, time.Now), s.zkBudget(), field)
	})
	if err == nil {
		s.log.Info("topology rebalancing", "topology", req.GetName(), "in", wait)
		s.actionsChanged()
	}
	return &nimbusv1.RebalanceTopologyResponse{}, apistatus.ToStatus(err)
}

// storedSpec reads, once and only when first called, the spec stored with
// a topology's code (the leader holds every committed topology's), so
// that authorization and an edit that both need its conf share one read.
type storedSpec func() (*nimbusv1.TopologySpec, error)

// storedSpec is topology id's storedSpec.
func (s *service) storedSpec(id string) storedSpec {
	return sync.OnceValues(func() (*nimbusv1.TopologySpec, error) { return codeservice.ReadSpec(s.store, id) })
}

// authorize asks whether the caller may act on topology id: its owner,
// the principals in its topology.users (read from spec, the conf stored
// with its code) and nimbus.admins may. Without the stored conf (a killed
// topology's code may be gone) only the owner and admins may.
func (s *service) authorize(ctx context.Context, act auth.Action, id string, base *clusterv1.StormBase, spec storedSpec) error {
	if !s.authz.Enabled() {
		return nil
	}
	var users []string
	if spec, err := spec(); err == nil {
		users = auth.TopologyUsers(spec.GetConfig())
	}
	return s.authz.Topology(ctx, act, id, base.GetOwner(), users)
}

// actionWait is how long a kill or rebalance of topology id waits:
// wait_secs if the request sets it, else the topology's
// topology.message.timeout.secs, read from the spec stored with its code
// (the leader holds every committed topology's code), else the nimbus's.
func (s *service) actionWait(id string, stored storedSpec, waitSecs *int32) time.Duration {
	if waitSecs != nil {
		return time.Duration(*waitSecs) * time.Second
	}
	spec, err := stored()
	if err != nil {
		s.log.Warn("cannot read the topology's conf; waiting the nimbus's message timeout",
			"topology", id, "wait", s.cfg.TopologyMessageTimeout, "err", err)
		return s.cfg.TopologyMessageTimeout
	}
	return settingsOf(s.cfg, spec.GetConfig()).messageTimeout
}

// GetTopologyConf answers a topology's effective conf (effectiveConf) from
// the spec stored with its code, to a caller allowed to read it.
func (s *service) GetTopologyConf(ctx context.Context, req *nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error) {
	if err := validate.GetTopologyConf(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	id, base, err := s.view.ByName(req.GetName())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	stored := s.storedSpec(id)
	if err := s.authorize(ctx, auth.ActionReadConf, id, base, stored); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	spec, err := stored()
	if errors.Is(err, codedistributor.ErrNotHeld) {
		err = fmt.Errorf("%w: this nimbus does not hold the code of %s yet; ask the leader", apierr.ErrCodeStoreUnavailable, req.GetName())
	}
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return &nimbusv1.GetTopologyConfResponse{TopologyId: id, Entries: effectiveConf(s.cfg, spec)}, nil
}

// zkBudget is what one node the leader writes may hold, with the
// supervisors registered now.
func (s *service) zkBudget() topology.Budget {
	return topology.NewBudget(s.cfg.ZKMaxBuffer, s.view.Supervisors.Snapshot())
}

// transition applies edit, the caller's act, to the named topology's
// StormBase on the leader, if the caller may (authorize). It reads the node
// afresh and writes with a version check inside the fenced write: a cache
// can lag a write made a moment ago (a kill, then an activate that must not
// undo it). edit reports whether it changed anything; either way the
// answer comes from a nimbus that still leads.
func (s *service) transition(ctx context.Context, name string, act auth.Action, edit topology.Change) error {
	return s.transitionOf(ctx, name, act, func(string, storedSpec) topology.Change { return edit })
}

// transitionOf is transition with an edit that depends on the topology's
// id and stored spec (its conf's message timeout: actionWait), which it
// shares with authorize. Its ZooKeeper calls are bounded by ctx's deadline:
// a read ZooKeeper does not answer in time is UNAVAILABLE (nothing
// written), a write UNKNOWN (it may still apply). Once the write is
// acknowledged it answers only when this nimbus's cache shows it, so a read
// here after the answer sees it (awaitStormVersion).
func (s *service) transitionOf(ctx context.Context, name string, act auth.Action, editOf func(id string, spec storedSpec) topology.Change) error {
	term, err := s.leaderTerm(ctx)
	if err != nil {
		return err
	}
	id, cached, err := s.view.ByName(name)
	if err != nil {
		return err
	}
	spec := s.storedSpec(id)
	if err := s.authorize(ctx, act, id, cached, spec); err != nil {
		return err
	}
	edit := editOf(id, spec)
	for range 3 {
		base, version, err := s.sess.ReadFor(ctx).Storm(id)
		if errors.Is(err, cluster.ErrNoNode) {
			return fmt.Errorf("%w: %q", apierr.ErrNotFound, name) // removed meanwhile
		}
		if err != nil {
			return err
		}
		changed, err := edit(base)
		if err != nil {
			return err
		}
		// Even a no-op goes through the fence: a deposed leader that has
		// not noticed yet must not answer as the leader.
		op, written := s.sess.Ops().CheckStorm(id, version), version
		if changed {
			base.Epoch = term.Epoch()
			op, written = s.sess.Ops().SetStorm(id, base, version), version+1 // a set at a version leaves the next
		}
		_, err = term.MultiCtx(ctx, op)
		if errors.Is(err, cluster.ErrNoNode) {
			return fmt.Errorf("%w: %q", apierr.ErrNotFound, name)
		}
		if err == nil {
			s.awaitStormVersion(ctx, term, id, written)
			return nil
		}
		if !errors.Is(err, cluster.ErrBadVersion) {
			return err
		}
	}
	return fmt.Errorf("nimbus: %s changed three times during the update; try again", name)
}

// awaitStormVersion waits until this nimbus's /storms cache has read
// topology id at version v (or seen it deleted since), within the
// request's deadline and while term lasts: read-your-writes at the leader.
// The write is acknowledged either way; a cache still behind when the
// deadline nears is logged, not failed.
func (s *service) awaitStormVersion(ctx context.Context, term *leader.Term, id string, v int32) {
	if !s.view.Storms.AwaitVersion(ctx, term.Done(), id, v) {
		got, _ := s.view.Storms.Version(id)
		s.log.Info("answering before the cache shows the write", "topology", id, "version", v, "cached_version", got)
	}
}
