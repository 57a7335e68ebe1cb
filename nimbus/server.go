package nimbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/bittorrent" // storm.codedistributor.class: bittorrent
	_ "github.com/nimbusha/nimbus/codedistributor/hdfs"       // storm.codedistributor.class: hdfs
	_ "github.com/nimbusha/nimbus/codedistributor/localfs"    // the default backend
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/internal/version"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Server is one nimbus daemon. New builds it and starts nothing; Start
// brings it up; Close takes it down.
type Server struct {
	cfg  *configs.Config
	base *slog.Logger // for the parts, which add their own component
	log  *slog.Logger
	reg  *prometheus.Registry

	// Set by Start.
	listener    net.Listener
	metricsLn   net.Listener
	grpc        *grpc.Server
	metricsHTTP *http.Server
	health      *health.Server
	sess        *cluster.Session
	election    *leader.Election
	self        *clusterv1.NimbusInfo
	view        *view
	metrics     *metrics
	store       *codedistributor.Store
	peers       *codedistributor.Peers
	dist        codedistributor.Distributor
	syncer      *codesync.Syncer
	svc         *service
	actions     chan struct{} // wakes the leader loop
	stopSync    context.CancelFunc
	cancel      context.CancelFunc
	wg          sync.WaitGroup

	ready     chan struct{}
	errc      chan error
	closeOnce sync.Once
}

// New returns a nimbus for cfg, which must be valid.
func New(cfg *configs.Config, logger *slog.Logger) *Server {
	return &Server{
		cfg:   cfg,
		base:  logger,
		log:   logger.With("component", "nimbus"),
		reg:   prometheus.NewRegistry(),
		ready: make(chan struct{}),
		errc:  make(chan error, 1),
	}
}

// Start listens, connects to ZooKeeper, registers this nimbus, joins the
// leader queue and serves gRPC. It returns once the session exists and the
// goroutines run; ReadyNotify says when the caches are loaded and the
// nimbus is registered. On error, everything started is stopped.
func (s *Server) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	cfg := s.cfg
	// An IP literal binds that interface only (tests stay on loopback);
	// a host name binds every interface and is what others dial.
	bindHost := ""
	if net.ParseIP(cfg.NimbusHost) != nil {
		bindHost = cfg.NimbusHost
	}
	if s.listener, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(cfg.NimbusGRPCPort))); err != nil {
		return fmt.Errorf("nimbus: listen on nimbus.grpc.port %d: %w", cfg.NimbusGRPCPort, err)
	}
	port := s.listener.Addr().(*net.TCPAddr).Port
	s.self = &clusterv1.NimbusInfo{
		Host:            cfg.NimbusHost,
		Port:            int32(port),
		StartTimeUnixMs: time.Now().UnixMilli(),
		Version:         version.Version,
	}
	if cfg.NimbusMetricsPort >= 0 {
		if s.metricsLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(cfg.NimbusMetricsPort))); err != nil {
			return fmt.Errorf("nimbus: listen on nimbus.metrics.port %d: %w", cfg.NimbusMetricsPort, err)
		}
	}

	if s.store, err = codedistributor.OpenStore(filepath.Join(cfg.LocalDir, "nimbus")); err != nil {
		return fmt.Errorf("nimbus: storm.local.dir %s: %w", cfg.LocalDir, err)
	}
	s.sess, err = cluster.Connect(ctx, cluster.SessionConfig{
		Servers:        cfg.ZKServers(),
		SessionTimeout: cfg.ZKSessionTimeout,
		ConnectTimeout: cfg.ZKConnectionTimeout,
		Root:           cfg.ZKRoot,
		Logger:         s.base,
	})
	if err != nil {
		return err
	}
	paths := s.sess.Paths()
	if err := s.sess.EnsureDirs(paths.LeaderLock(), paths.Nimbuses(), paths.Storms(), paths.CodeDistributor(), paths.Assignments(), paths.Supervisors()); err != nil {
		return fmt.Errorf("nimbus: %w", err)
	}
	addr := cluster.HostPort(s.self)
	s.peers = codedistributor.NewPeers()

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.metrics = newMetrics(s.reg)
	m := s.metrics
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// The directories of the layout are re-created if deleted by hand (the
	// whole root, say): a cluster without them could not elect or submit.
	v := &view{
		nimbuses: cluster.NewNimbusInfoCache(s.sess, paths.Nimbuses(), s.base).Recreate(),
		locks:    cluster.NewNimbusInfoCache(s.sess, paths.LeaderLock(), s.base).Recreate(),
		storms:   cluster.NewDirCache(s.sess, paths.Storms(), func() *clusterv1.StormBase { return new(clusterv1.StormBase) }, s.base).Recreate(),
		replicas: cluster.NewReplicaCache(s.sess, s.base),
		// Heartbeats rewrite supervisors' nodes every few seconds: watching
		// them would cost every nimbus a read per heartbeat. Membership is
		// watched; the leader refreshes the payloads (see lead).
		supervisors: cluster.NewDirCache(s.sess, paths.Supervisors(),
			func() *clusterv1.SupervisorInfo { return new(clusterv1.SupervisorInfo) }, s.base).Recreate().MembersOnly(),
		assignments: cluster.NewDirCache(s.sess, paths.Assignments(),
			func() *clusterv1.Assignment { return new(clusterv1.Assignment) }, s.base).Recreate(),
		now: time.Now,
	}
	v.replicas.Distributions.Recreate()
	s.view = v
	// The gate of invariant 6: a nimbus that wins the lock leads only if it
	// holds every active topology's code, checked afresh.
	var syncer *codesync.Syncer
	s.election = leader.New(leader.Config{Session: s.sess, Self: s.self, Logger: s.base,
		Eligible: func() error { return syncer.Eligible() }})
	// The syncer comes first: the backend tells it of corrupt copies. Its
	// fetcher gets the backend before anything runs.
	fetcher := &codedistributor.Fetcher{Store: s.store}
	syncer = codesync.New(codesync.Config{
		Session:    s.sess,
		Store:      s.store,
		Fetcher:    fetcher,
		Storms:     v.storms,
		Replicas:   v.replicas,
		Self:       s.self,
		Election:   s.election,
		SweepEvery: cfg.CodeSyncFreq,
		Logger:     s.base,
	})
	s.syncer = syncer
	fetcher.Params = codedistributor.Params{Config: cfg, Session: s.sess, Peers: s.peers, Self: addr,
		Store: s.store, OnCorrupt: s.syncer.Invalidate, Metrics: s.reg, Logger: s.base}
	if s.dist, err = codedistributor.New(cfg.CodeDistributorClass, fetcher.Params); err != nil {
		return err
	}
	fetcher.Dist = s.dist
	s.actions = make(chan struct{}, 1)

	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(nimbusv1.LeaderHealthService, healthpb.HealthCheckResponse_NOT_SERVING)
	encodings := newSharedEncodings()
	v.share = encodings.share
	s.grpc = grpc.NewServer(grpc.ForceServerCodecV2(encodings))
	s.svc = &service{
		cfg: cfg, log: s.log, self: addr, view: v, sess: s.sess, election: s.election,
		store: s.store, dist: s.dist, syncer: s.syncer, inFlight: map[string]bool{}, pending: map[string]bool{},
		actionsChanged: func() {
			select {
			case s.actions <- struct{}{}:
			default:
			}
		},
	}
	nimbusv1.RegisterNimbusServiceServer(s.grpc, s.svc)
	nimbusv1.RegisterCodeServiceServer(s.grpc, NewCodeService(s.store, s.syncer.Invalidate, m.codeSent))
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)

	registered := make(chan struct{})
	var registerOnce sync.Once
	for _, c := range []interface{ Run(context.Context) error }{v.nimbuses, v.locks, v.storms, v.replicas, v.supervisors, v.assignments} {
		s.wg.Go(func() { _ = c.Run(runCtx) })
	}
	s.wg.Go(func() {
		cluster.EphemeralNode{Path: paths.Nimbus(addr), Data: cluster.Encode(s.self), RecreateParent: true,
			Ready: func() { registerOnce.Do(func() { close(registered) }) }}.Keep(runCtx, s.sess, s.log)
	})
	// codesync queues the election once this nimbus holds all code.
	syncCtx, stopSync := context.WithCancel(runCtx)
	s.stopSync = stopSync
	s.wg.Go(func() { _ = s.syncer.Run(syncCtx) })
	s.wg.Go(func() { _ = s.election.Run(runCtx) })
	s.wg.Go(func() { s.leadTerms(runCtx) })
	s.wg.Go(func() { s.watchStatus(runCtx, v, m) })
	s.wg.Go(func() {
		if err := s.grpc.Serve(s.listener); err != nil {
			s.fail(fmt.Errorf("nimbus: grpc: %w", err))
		}
	})
	if s.metricsLn != nil {
		s.metricsHTTP = &http.Server{Handler: daemon.MetricsHandler(s.reg), ReadHeaderTimeout: 10 * time.Second}
		s.wg.Go(func() {
			if err := s.metricsHTTP.Serve(s.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.fail(fmt.Errorf("nimbus: metrics: %w", err))
			}
		})
	}
	s.wg.Go(func() {
		for _, c := range []<-chan struct{}{registered, v.nimbuses.Loaded(), v.locks.Loaded(), v.storms.Loaded(), v.replicas.Distributions.Loaded()} {
			select {
			case <-c:
			case <-runCtx.Done():
				return
			}
		}
		attrs := []any{"addr", addr, "listen", s.listener.Addr().String(), "version", version.Version}
		if s.metricsLn != nil {
			attrs = append(attrs, "metrics", s.metricsLn.Addr().String())
		}
		s.log.Info("nimbus ready", attrs...)
		close(s.ready)
	})
	return nil
}

// watchStatus keeps health and metrics in step with the session, the
// caches and this nimbus's own term, and logs leader changes it sees.
func (s *Server) watchStatus(ctx context.Context, v *view, m *metrics) {
	var lastEpoch int64 // zero: no leader seen yet
	for {
		// Take every wake-up channel before reading what it guards: a
		// change in between would otherwise go unseen until the next one.
		state, _, sessChanged := s.sess.State()
		elected, locks, nimbuses := s.election.Changed(), v.locks.Changed(), v.nimbuses.Changed()
		connected := state == zk.StateHasSession
		loaded := isClosed(v.nimbuses.Loaded()) && isClosed(v.locks.Loaded()) && isClosed(v.storms.Loaded())
		setServing(s.health, "", connected && loaded)
		term := s.election.Current()
		setServing(s.health, nimbusv1.LeaderHealthService, term != nil)
		m.isLeader.Set(boolFloat(term != nil))
		m.zkConnected.Set(boolFloat(connected))

		head, epoch, ok := v.leader()
		if !ok {
			epoch = 0
		}
		if epoch != lastEpoch {
			m.epoch.Set(float64(epoch))
			if ok {
				m.leaderChanges.Inc()
				s.log.Info("leader changed", "leader", cluster.HostPort(head), "epoch", epoch)
			}
			lastEpoch = epoch
		}
		select {
		case <-ctx.Done():
			return
		case <-sessChanged:
		case <-elected:
		case <-locks: // also closed when a cache loads
		case <-nimbuses:
		}
	}
}

// Addr is the address other processes dial: nimbus.host and the bound
// gRPC port. Valid after Start.
func (s *Server) Addr() string { return cluster.HostPort(s.self) }

// ReadyNotify is closed once the nimbus is registered and its caches are
// loaded.
func (s *Server) ReadyNotify() <-chan struct{} { return s.ready }

// Err delivers a fatal error from a listener; the caller should Close.
func (s *Server) Err() <-chan error { return s.errc }

func (s *Server) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// Close stops the nimbus in an order that hands leadership over at once:
// it leaves the leader queue first (deleting its lock node, so a follower
// leads within a ZooKeeper notification), then drains in-flight RPCs for
// up to nimbus.drain.timeout.secs, then deregisters and ends the session.
// It is idempotent and safe after a failed Start.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.stopSync != nil {
			s.stopSync() // or it would queue this nimbus again
		}
		if s.election != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ZKSessionTimeout)
			if err := s.election.Leave(ctx); err != nil {
				s.log.Warn("could not leave the leader queue; the session timeout hands over", "err", err)
			}
			cancel()
		}
		if s.health != nil {
			s.health.Shutdown()
		}
		if s.grpc != nil {
			drained := make(chan struct{})
			go func() { s.grpc.GracefulStop(); close(drained) }()
			select {
			case <-drained:
			case <-time.After(s.cfg.NimbusDrainTimeout):
				s.log.Warn("drain timed out; closing connections", "timeout", s.cfg.NimbusDrainTimeout)
				s.grpc.Stop()
				<-drained
			}
		} else if s.listener != nil {
			s.listener.Close()
		}
		if s.metricsHTTP != nil {
			s.metricsHTTP.Close()
		} else if s.metricsLn != nil {
			s.metricsLn.Close()
		}
		if s.cancel != nil {
			s.cancel()
		}
		s.wg.Wait()
		if s.dist != nil {
			s.dist.Close()
		}
		if s.peers != nil {
			s.peers.Close()
		}
		if s.sess != nil {
			s.sess.Close()
		}
		s.log.Info("nimbus stopped")
	})
}

func setServing(h *health.Server, service string, ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	h.SetServingStatus(service, st)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
