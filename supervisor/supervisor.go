package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/clusterid"
	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/backends" // every storm.codedistributor.class
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// resync is the safety period of the reconcile loop; changes wake it at once.
const resync = 10 * time.Second

// Supervisor is one supervisor daemon. New builds it and starts nothing;
// Start brings it up; Close stops its workers and takes it down.
type Supervisor struct {
	cfg  *configs.Config
	base *slog.Logger
	log  *slog.Logger

	// The parts, made by Start.
	id          string
	dir         string
	started     time.Time
	sess        *cluster.Session
	store       *codedistributor.Store
	dist        codedistributor.Distributor
	fetcher     *codedistributor.Fetcher
	assignments *cluster.DirCache[*clusterv1.Assignment]
	storms      *cluster.DirCache[*clusterv1.StormBase]      // the topologies' statuses, for the worker protocol
	keepers     keepers                                      // what holds each worker's run (keep.go)
	versions    *cluster.DirCache[*clusterv1.ClusterVersion] // /versions: the cluster's identity and version
	// Blobs (blobs.go): the blob store at <dir>/blobs (served on the code
	// port too), /blobstore, and the versions the workers link.
	blobStore *codedistributor.Store
	blobs     *cluster.BlobCache // /blobstore and each blob's replicas
	blobMetas *cluster.DirCache[*clusterv1.BlobMeta]
	localizer *blobstore.Localizer
	memory    *clusterid.Memory // the cluster this supervisor belongs to
	// wctx is every worker's: never cancelled by Close, which leaves the
	// workers to their keepers; a worker's own stop ends it.
	wctx      context.Context
	metricsLn net.Listener    // nil when supervisor.metrics.port is -1
	codeLn    net.Listener    // nil when supervisor.grpc.port is -1
	codeSrv   *grpc.Server    // serves the store on codeLn
	tls       *certs.Reloader // nil when nimbus.grpc.tls.enable is false
	// logviewerLn serves the workers' logs (logviewer.go); nil when
	// logviewer.port is -1.
	logviewerLn net.Listener

	wake chan struct{}
	beat chan struct{}
	lost chan struct{}    // a heartbeat found the node gone
	lc   daemon.Lifecycle // what Start started, and how Close stops it

	authorizers []*auth.Authorizer // the code port's and the logviewer's: a reload swaps their policy (reload.go)
	reloader    *daemon.Reloader   // the configuration file read again (reload.go)

	mu      sync.Mutex
	workers map[int32]*worker // by port
	// stopping are the workers being stopped: gone from workers, their
	// keepers may still write their logs until their stop returns.
	stopping map[*worker]struct{}
	// blobWaits are the slots whose worker waits for its blobs, with why.
	blobWaits map[int32]*clusterv1.WorkerState
}

// New returns a supervisor for cfg, which must be valid.
func New(cfg *configs.Config, logger *slog.Logger) *Supervisor {
	s := &Supervisor{
		cfg: cfg, base: logger, log: logger.With("component", "supervisor"),
		wake: make(chan struct{}, 1), beat: make(chan struct{}, 1), lost: make(chan struct{}, 1),
		workers: map[int32]*worker{}, stopping: map[*worker]struct{}{},
	}
	s.lc.OnClose(func() { s.log.Info("supervisor stopped") }) // the last stop
	return s
}

// ID is the supervisor's stable id; valid after Start.
func (s *Supervisor) ID() string { return s.id }

// ReadyNotify is closed once the supervisor is registered and has read
// its assignments.
func (s *Supervisor) ReadyNotify() <-chan struct{} { return s.lc.Ready() }

// Err delivers a fatal error from the metrics listener; the caller should
// Close.
func (s *Supervisor) Err() <-chan error { return s.lc.Err() }

// Start brings the supervisor up in these steps: check it may run workers
// as asked, claim its local directory (and the id kept there), load its TLS
// material, listen on the metrics port, connect (the ZooKeeper session,
// the code distributor, the assignments cache) and run (registration and
// heartbeats, the reconcile loop, metrics, the code port).
//
// ctx bounds connecting only. Once Start returns, the supervisor runs
// until Close, under a context of its own; ReadyNotify says when it is
// registered and has read its assignments. On error, whatever was started
// is stopped.
func (s *Supervisor) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.started = time.Now()
	if err := s.checkPrivileges(); err != nil {
		return err
	}
	if err := s.claimDir(); err != nil {
		return err
	}
	s.adopt() // first: its keepers count their bound until they hear from it
	// Its certificate identifies it to the nimbuses it fetches code from.
	if s.tls, err = certs.FromConfig(s.cfg, s.base); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	if err := s.listenMetrics(); err != nil {
		return err
	}
	if err := s.listenCode(); err != nil {
		return err
	}
	if err := s.listenLogviewer(); err != nil {
		return err
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	s.run()
	return nil
}

// claimDir locks storm.local.dir/supervisor, loads the id kept there and
// opens the code store.
func (s *Supervisor) claimDir() (err error) {
	s.dir = filepath.Join(s.cfg.LocalDir, "supervisor")
	if err := os.MkdirAll(filepath.Join(s.dir, "workers"), 0o755); err != nil {
		return fmt.Errorf("supervisor: storm.local.dir %s: %w", s.cfg.LocalDir, err)
	}
	// One supervisor per local dir: two would share an id, take each
	// other's registration and start workers on the same ports.
	lock, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	s.lc.OnClose(func() { lock.Close() })
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("supervisor: %s is in use by another supervisor: %w", s.dir, err)
	}
	if s.id, err = loadID(s.dir); err != nil {
		return err
	}
	s.log = s.log.With("supervisor_id", s.id)
	if s.store, err = codedistributor.OpenStore(s.dir); err != nil {
		return err
	}
	if s.blobStore, err = codedistributor.OpenStore(filepath.Join(s.dir, "blobs")); err != nil {
		return err
	}
	if s.memory, err = clusterid.Open(s.dir); err != nil {
		return err
	}
	s.keepers, err = newKeepers(s.dir, s.cfg)
	return err
}

// adopt takes on the workers that the keepers in its directory hold: left
// by the supervisor process before this one (an upgrade, a crash), they
// run on with the same pids and state. The reconcile loop then stops those
// the assignments no longer place here.
func (s *Supervisor) adopt() {
	s.wctx = context.Background()
	s.lc.OnClose(s.detachWorkers) // a Start that fails later leaves them too
	for _, f := range s.keepers.adopt(s.log) {
		w, err := adoptWorker(s.wctx, f, newLaunchPolicy(s.cfg), s.keepers, s.log, s.heartbeatSoon)
		if err != nil {
			s.log.Warn("cannot adopt a worker: stopping it", "err", err)
			_ = f.conn.Stop(s.keepers.grace)
			f.conn.Close()
			continue
		}
		s.mu.Lock()
		if old := s.workers[w.spec.Port]; old != nil {
			s.mu.Unlock()
			w.stop() // two keepers for one port: keep one
			continue
		}
		s.workers[w.spec.Port] = w
		s.mu.Unlock()
		s.log.Info("worker adopted", "topology", w.spec.TopologyID, "port", w.spec.Port, "pid", f.conn.Hello().Pid,
			"restarts", w.status().GetRestarts())
	}
}

// connect opens the ZooKeeper session and builds what reads and fetches
// through it: the code distributor and the assignments cache.
func (s *Supervisor) connect(ctx context.Context) (err error) {
	cfg := s.cfg
	s.sess, err = cluster.Connect(ctx, daemon.SessionConfig(cfg, s.base))
	if err != nil {
		return err
	}
	// The session is not closed: its registration must outlive this
	// process until its workers' keepers end them (section 17), so it
	// expires with the process instead.
	paths := s.sess.Paths()
	if err := s.sess.EnsureDirs(paths.Supervisors()); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	peers := codedistributor.NewPeers(s.tls.ClientCredentials())
	s.lc.OnClose(peers.Close)
	params := codedistributor.Params{Config: cfg, Session: s.sess, Peers: peers, Store: s.store, Blobs: s.blobStore, Logger: s.base}
	if s.dist, err = codedistributor.New(cfg.CodeDistributorClass, params); err != nil {
		return err
	}
	s.lc.OnClose(func() { s.dist.Close() })
	s.fetcher = &codedistributor.Fetcher{Params: params, Dist: s.dist, Store: s.store}
	s.assignments = cluster.NewDirCache(s.sess, paths.Assignments(), func() *clusterv1.Assignment { return new(clusterv1.Assignment) }, s.base)
	s.storms = cluster.NewDirCache(s.sess, paths.Storms(), func() *clusterv1.StormBase { return new(clusterv1.StormBase) }, s.base)
	s.versions = cluster.NewDirCache(s.sess, paths.Versions(), func() *clusterv1.ClusterVersion { return new(clusterv1.ClusterVersion) }, s.base)
	return s.openLocalizer(params)
}

// run starts every loop. Their stops, in the reverse order, stop the
// workers first, while this supervisor is still registered and
// heartbeating, then the rest.
func (s *Supervisor) run() {
	ctx, cancel := context.WithCancel(context.Background())
	s.lc.OnClose(func() {
		cancel()
		s.lc.Wait()
	})
	s.lc.Go(func() { _ = s.assignments.Run(ctx) })
	s.lc.Go(func() { _ = s.storms.Run(ctx) })
	s.lc.Go(func() { _ = s.versions.Run(ctx) })
	s.lc.Go(func() { _ = s.blobs.Run(ctx) })
	registered := s.register(ctx)
	s.lc.Go(func() { s.heartbeats(ctx, registered) })
	s.lc.Go(func() { s.announceReady(ctx, registered) })
	s.serveMetrics()
	s.serveCode()
	if err := s.serveLogviewer(ctx); err != nil {
		s.lc.Fail(err)
	}
	s.reloadConfig(ctx) // after every authorizer is made
	s.reconcile(ctx)
}

// register keeps this supervisor's node under /supervisors, which its
// heartbeats rewrite; the channel is closed once it exists.
func (s *Supervisor) register(ctx context.Context) <-chan struct{} {
	// The heartbeat rewrites the node; Keep (re)creates it, and its
	// directory if the root was deleted by hand, when a heartbeat finds it
	// gone.
	node := cluster.EphemeralNode{Path: s.sess.Paths().Supervisor(s.id), Data: cluster.Encode(s.info()), RecreateParent: true,
		OwnerWrites: true, Lost: s.lost, Leave: true,
		Ready: s.heartbeatSoon, // the node was (re)created with stale data
	}
	return daemon.Register(ctx, &s.lc, s.sess, node, s.log)
}

// reconcile runs the reconcile loop; its stop waits until the loop has
// stopped every worker.
func (s *Supervisor) reconcile(ctx context.Context) {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.reconcileLoop(ctx)
	}()
	s.lc.OnClose(func() {
		stop() // it stops the workers as it returns
		<-done
	})
}

// announceReady logs the ready line and closes ReadyNotify once this
// supervisor is registered and has read its assignments.
func (s *Supervisor) announceReady(ctx context.Context, registered <-chan struct{}) {
	s.lc.Announce(ctx, s.log, "supervisor ready", func() []any {
		metrics := ""
		if s.metricsLn != nil {
			metrics = s.metricsLn.Addr().String()
		}
		return []any{"id", s.id, "host", s.cfg.LocalHostname, "slots", s.cfg.SupervisorSlotsPorts,
			"metrics", metrics, "code_port", s.codePort(), "logviewer", s.logviewerURL(), "version", version.Version}
	}, registered, s.assignments.Loaded())
}

// Close leaves every worker to its keeper for the next supervisor to
// adopt, or, while the cluster version is below
// version.KeepWorkersOnStop's release, stops them (SIGTERM, then SIGKILL
// after supervisor.worker.shutdown.sleep.secs) while still registered; then
// it ends its loops, closes the code distributor and releases its local
// directory, leaving its session to expire (section 17). Idempotent, and
// safe after a failed Start.
func (s *Supervisor) Close() { s.lc.Close() }

func (s *Supervisor) heartbeatSoon() {
	select {
	case s.beat <- struct{}{}:
	default:
	}
}

func (s *Supervisor) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// info is the SupervisorInfo this supervisor publishes.
func (s *Supervisor) info() *clusterv1.SupervisorInfo {
	info := &clusterv1.SupervisorInfo{
		SupervisorId: s.id, Host: s.cfg.LocalHostname, StartTimeUnixMs: s.started.UnixMilli(),
		Version: version.Version, Release: version.Release, LastHeartbeatUnixMs: time.Now().UnixMilli(), CodePort: s.codePort(),
		LogviewerUrl: s.logviewerURL(),
	}
	for _, p := range s.cfg.SupervisorSlotsPorts {
		info.SlotPorts = append(info.SlotPorts, int32(p))
	}
	s.mu.Lock()
	byPort := maps.Clone(s.workers)
	s.mu.Unlock()
	info.UsedPorts = slices.Sorted(maps.Keys(byPort))
	fits := make([]fitFunc, 0, len(byPort))
	for _, port := range info.UsedPorts { // by port: the budget's shares go alike at each beat
		w := byPort[port]
		w.pollErrors() // what it reported since the last beat (worker protocol)
		w.pollMetrics()
		st := w.status()
		st.Metrics = w.lastMetrics()
		info.Workers = append(info.Workers, st)
		fits = append(fits, w.fitMetrics)
	}
	capMetrics(info.Workers, fits, heartbeatMetricsBudget(s.cfg.ZKMaxBuffer))
	info.Workers = append(info.Workers, s.waitingStates()...) // slots whose worker waits for its blobs
	return info
}

// heartbeats writes this supervisor's state every
// supervisor.heartbeat.frequency.secs and when a worker changes state: one
// write per heartbeat, and no other request (nimbuses read supervisors'
// nodes when they appear and the leader now and then, never per write).
// The first waits until this process has registered: until then the node
// may still be an earlier process's, whose version a write would change
// under the registration that replaces it.
func (s *Supervisor) heartbeats(ctx context.Context, registered <-chan struct{}) {
	select {
	case <-registered:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(s.cfg.SupervisorHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.beat:
		}
		if state, _, _ := s.sess.State(); state != cluster.StateHasSession {
			continue // workers keep running; the next beat after reconnecting tells
		}
		err := s.sess.SetSupervisor(s.id, s.info())
		switch {
		case errors.Is(err, cluster.ErrNoNode):
			select {
			case s.lost <- struct{}{}: // Keep creates it again
			default:
			}
		case err != nil:
			s.log.Debug("heartbeat failed", "err", err)
		}
	}
}
