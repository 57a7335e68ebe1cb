package nimbus

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/clusterid"
	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/backends" // every storm.codedistributor.class
	"github.com/nimbusha/nimbus/codeservice"
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/depose"
	"github.com/nimbusha/nimbus/internal/daemon"
	"github.com/nimbusha/nimbus/internal/version"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/leading"
	"github.com/nimbusha/nimbus/nimbus/view"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Server is one nimbus daemon. New builds it and starts nothing; Start
// brings it up; Close takes it down.
type Server struct {
	cfg  *configs.Config
	base *slog.Logger // for the parts, which add their own component
	log  *slog.Logger
	reg  *prometheus.Registry

	// The parts, made by Start: listen, connect, build.
	self      *clusterv1.NimbusInfo
	listener  net.Listener
	metricsLn net.Listener // nil when nimbus.metrics.port is -1
	uiLn      net.Listener // nil when ui.port is -1
	healthLn  net.Listener // nil when nimbus.health.port is -1
	store     *codedistributor.Store
	blobStore *codedistributor.Store // blobs (docs/ARCHITECTURE.md section 24)
	blobs     *cluster.BlobCache
	blobSync  *blobstore.Syncer
	memory    *clusterid.Memory // the cluster this nimbus belongs to
	sess      *cluster.Session
	metrics   *metrics
	view      *view.View
	dist      codedistributor.Distributor
	election  *leader.Election
	syncer    *codesync.Syncer
	duties    *leading.Duties // the leader's work in each term
	svc       *service
	health    *health.Server
	grpc      *grpc.Server
	actions   chan struct{} // wakes a round of the leader's duties (nimbus/leading)
	// storeHealth is whether the code store can be written (status.go).
	storeHealth *storeHealth
	tls         *certs.Reloader  // nil when nimbus.grpc.tls.enable is false
	authz       *auth.Authorizer // allows everything without client authentication
	ui          *http.Server     // the REST API and web UI (ui.go); nil without ui.port
	sightings   *sightings       // since when no leader, no session (ui.go)
	deposer     *depose.Deposer  // deposes a leader that is certainly dead
	reloader    *daemon.Reloader // the configuration file read again (reload.go)

	lc daemon.Lifecycle // what Start started, and how Close stops it
}

// New returns a nimbus for cfg, which must be valid.
func New(cfg *configs.Config, logger *slog.Logger) *Server {
	s := &Server{
		cfg:  cfg,
		base: logger,
		log:  logger.With("component", "nimbus"),
		reg:  prometheus.NewRegistry(),
	}
	s.lc.OnClose(func() { s.log.Info("nimbus stopped") }) // the last stop
	return s
}

// Start brings the nimbus up in five steps: listen (the gRPC and metrics
// ports), secure (the TLS material and the authorizer), connect (the local
// code store, the ZooKeeper session and the layout's directories), build
// (the caches, the code distributor, the election and its gate, the
// syncer, the gRPC services) and run (every loop and server).
//
// ctx bounds connecting only. Once Start returns, the nimbus runs until
// Close, under a context of its own; ReadyNotify says when it is
// registered and its caches are loaded. On error, whatever was started is
// stopped.
func (s *Server) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.listen(); err != nil {
		return err
	}
	if err := s.secure(); err != nil {
		return err
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	if err := s.build(); err != nil {
		return err
	}
	s.run()
	return nil
}

// listen opens the gRPC port and, unless disabled, the metrics port and
// the UI's.
func (s *Server) listen() (err error) {
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
	s.lc.OnClose(func() { s.listener.Close() }) // closed already if gRPC served it
	s.self = &clusterv1.NimbusInfo{
		Host:            cfg.NimbusHost,
		Port:            int32(s.listener.Addr().(*net.TCPAddr).Port),
		StartTimeUnixMs: time.Now().UnixMilli(),
		Version:         version.Version,
		Release:         version.Release,
	}
	if cfg.NimbusMetricsPort != configs.PortDisabled {
		if s.metricsLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(cfg.NimbusMetricsPort))); err != nil {
			return fmt.Errorf("nimbus: listen on nimbus.metrics.port %d: %w", cfg.NimbusMetricsPort, err)
		}
		s.lc.OnClose(func() { s.metricsLn.Close() })
	}
	if err := s.listenHealth(bindHost); err != nil {
		return err
	}
	return s.listenUI(bindHost)
}

// secure loads the TLS material and the authorizer, and says loudly when
// anyone who reaches the gRPC port may act: no TLS on an address others
// can reach, or TLS without client authentication.
func (s *Server) secure() (err error) {
	cfg := s.cfg
	if s.tls, err = certs.FromConfig(cfg, s.base); err != nil {
		return fmt.Errorf("nimbus: %w", err)
	}
	if s.authz, err = auth.New(cfg, s.base); err != nil {
		return fmt.Errorf("nimbus: %w", err)
	}
	addr := s.listener.Addr().(*net.TCPAddr)
	switch {
	case !cfg.TLSEnable && !addr.IP.IsLoopback():
		s.log.Warn("INSECURE: gRPC without TLS on an address others can reach: anyone who reaches it may submit code that every supervisor runs; set nimbus.grpc.tls.* (README: Security)",
			"listen", addr.String())
	case cfg.TLSEnable && !cfg.TLSClientAuthRequired:
		s.log.Warn("gRPC over TLS without client authentication: anyone who reaches the port may act; set nimbus.grpc.tls.client.auth.required (README: Security)",
			"listen", addr.String())
	}
	return nil
}

// connect opens the local code store and the ZooKeeper session, and makes
// sure the directories of the layout exist.
func (s *Server) connect(ctx context.Context) (err error) {
	cfg := s.cfg
	if s.store, err = codedistributor.OpenStore(filepath.Join(cfg.LocalDir, "nimbus")); err != nil {
		return fmt.Errorf("nimbus: storm.local.dir %s: %w", cfg.LocalDir, err)
	}
	if s.blobStore, err = codedistributor.OpenStore(filepath.Join(cfg.LocalDir, "nimbus", "blobs")); err != nil {
		return fmt.Errorf("nimbus: storm.local.dir %s: %w", cfg.LocalDir, err)
	}
	if s.memory, err = clusterid.Open(filepath.Join(cfg.LocalDir, "nimbus")); err != nil {
		return fmt.Errorf("nimbus: storm.local.dir %s: %w", cfg.LocalDir, err)
	}
	s.sess, err = cluster.Connect(ctx, daemon.SessionConfig(cfg, s.base))
	if err != nil {
		return err
	}
	s.lc.OnClose(s.sess.Close) // last: its ephemeral nodes go with it
	paths := s.sess.Paths()
	if err := s.sess.EnsureDirs(paths.LeaderLock(), paths.Nimbuses(), paths.Storms(), paths.CodeDistributor(), paths.Assignments(), paths.Supervisors(), paths.LostDir(), paths.Challenges(), paths.Versions(), paths.BlobStore()); err != nil {
		return fmt.Errorf("nimbus: %w", err)
	}
	return nil
}

// build makes every part, each whole: nothing is patched afterwards.
func (s *Server) build() (err error) {
	cfg := s.cfg
	s.metrics = newMetrics(s.reg)
	registerSessionMetrics(s.reg, s.sess)
	s.sightings = newSightings(s.reg, time.Now())
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	encodings := newSharedEncodings()
	s.view = view.New(s.sess, s.cfg.SupervisorHeartbeat, encodings.share, s.base)
	registerLostMetrics(s.reg, s.view)
	registerStatsMetrics(s.reg, s.view)

	peers := codedistributor.NewPeers(s.tls.ClientCredentials())
	s.lc.OnClose(peers.Close)
	params := codedistributor.Params{Config: cfg, Session: s.sess, Peers: peers, Self: s.Addr(),
		Store: s.store, Blobs: s.blobStore, Metrics: s.reg, Logger: s.base}
	if s.dist, err = codedistributor.New(cfg.CodeDistributorClass, params); err != nil {
		return err
	}
	s.lc.OnClose(func() { s.dist.Close() })

	// The gate of invariant 6: a nimbus that wins the lock leads only if
	// it holds every active topology's code, checked afresh; the syncer
	// keeps it queued only while it holds them.
	gate := codesync.Gate{Session: s.sess, Store: s.store, Storms: s.view.Storms, Lost: s.view.Lost,
		Versions: s.view.Versions, Memory: s.memory}
	s.view.Identity = gate.Identity
	s.election = leader.New(leader.Config{Session: s.sess, Self: s.self, Eligible: gate.Eligible, Logger: s.base})
	s.syncer = codesync.New(codesync.Config{
		Gate:        gate,
		Fetcher:     &codedistributor.Fetcher{Params: params, Dist: s.dist, Store: s.store},
		Replicas:    s.view.Replicas,
		Supervisors: s.view.Supervisors,
		Self:        s.self,
		Election:    s.election,
		SweepEvery:  cfg.CodeSyncFreq,
		CatchUpWait: cfg.ReplicationLogWait(),
		LostGrace:   lostGrace(cfg),
		Logger:      s.base,
	})

	s.blobs = cluster.NewBlobCache(s.sess, s.base)
	s.blobSync = blobstore.NewSyncer(blobstore.SyncerConfig{
		Session: s.sess, Blobs: s.blobs, Store: s.blobStore, Self: s.Addr(), SweepEvery: cfg.CodeSyncFreq, Logger: s.base,
		Fetcher: &codedistributor.Fetcher{Params: params, Dist: s.dist, Store: s.blobStore, Kind: codedistributor.KindBlob},
	})

	s.deposer = depose.New(depose.Config{Session: s.sess, Locks: s.view.Locks, Self: s.Addr(),
		Creds: s.tls.ClientCredentials(), SessionTimeout: cfg.ZKSessionTimeout, Metrics: s.reg, Logger: s.base})

	s.actions = make(chan struct{}, 1)
	s.storeHealth = new(storeHealth)
	s.svc = &service{
		cfg: cfg, log: s.log, self: s.Addr(), view: s.view, sess: s.sess, election: s.election, authz: s.authz,
		store: s.store, dist: s.dist, syncer: s.syncer, peers: peers, memory: s.memory, inFlight: map[string]bool{}, pending: map[string]bool{},
		blobStore: s.blobStore, blobs: s.blobs, blobSync: s.blobSync,
		blobWrites: map[string]bool{}, blobDeletes: map[string]bool{}, blobSubmits: map[string][]string{}, blobUses: map[string]map[string]validate.BlobUse{},
		uploads: newUploadGate(cfg.NimbusMaxUploads, s.storeHealth),
		actionsChanged: func() {
			select {
			case s.actions <- struct{}{}:
			default:
			}
		},
	}
	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(nimbusv1.LeaderHealthService, healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(nimbusv1.ReadyHealthService, healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(nimbusv1.LiveHealthService, healthpb.HealthCheckResponse_SERVING)
	s.duties = leading.New(leading.Config{Session: s.sess, View: s.view, Dist: s.dist, Pending: s.svc.isPending, SweepBlobs: s.svc.sweepStoredBlobs,
		Actions: s.actions, Nimbus: cfg, ClusterID: s.memory, Snapshot: s.svc.takeSnapshot,
		SnapshotDir: filepath.Join(cfg.LocalDir, "nimbus", "snapshots"), Metrics: leading.NewMetrics(s.reg), Logger: s.base})
	s.grpc = grpc.NewServer(s.grpcOptions(encodings)...)
	nimbusv1.RegisterNimbusServiceServer(s.grpc, s.svc)
	nimbusv1.RegisterCodeServiceServer(s.grpc, codeservice.New(s.store, s.metrics.codeSent, codeservice.WithAuthorizer(s.authz), codeservice.WithBlobs(s.blobStore)))
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s.buildUI()
}

// lostGrace is nimbus.code.lost.grace.secs for codesync: 0 never marks.
func lostGrace(cfg *configs.Config) time.Duration {
	grace, never := cfg.CodeLostGrace()
	if never {
		return 0
	}
	return grace
}

// Keepalive on the gRPC server: it pings a connection silent for
// keepaliveTime and closes it if the ping is not answered within
// keepaliveTimeout, so a client that vanished (a host gone, a half-open TCP
// connection) frees its streams in about a minute and a half, not TCP's
// hours; clients may ping it every keepaliveMinClientPing at most, even
// without a stream open, and are disconnected (GOAWAY) if they ping more
// often.
const (
	keepaliveTime          = time.Minute
	keepaliveTimeout       = 20 * time.Second
	keepaliveMinClientPing = 10 * time.Second
)

// writeBufferBytes is how much a connection's answer is gathered before a
// write to the socket. gRPC's 32 KiB default makes a 440 KB GetClusterInfo
// (5,000 topologies and supervisors) about fourteen writes, each waking the
// reader; with 512 KiB, gRPC alone served 10-15% more calls a second of
// 86 KB and of 443 KB (bench/RESULTS.md, the scale benchmark). The buffer
// is shared: a connection takes one from a pool to write and gives it back
// after, so idle connections hold none.
const writeBufferBytes = 512 << 10

// grpcOptions are the gRPC server's options, each set on purpose
// (docs/ARCHITECTURE.md section 4.4): the shared encodings (section 11),
// the concurrent streams a connection may have open (more wait in the
// client until one ends: nimbus.grpc.max.concurrent.streams), the largest
// message received (nimbus.grpc.max_buffer_size; an artifact chunk is at
// most 1 MiB, a larger message is refused with RESOURCE_EXHAUSTED before
// it is read), keepalive, and the write buffer.
func (s *Server) grpcOptions(encodings *sharedEncodings) []grpc.ServerOption {
	creds := insecure.NewCredentials()
	if s.tls != nil {
		creds = s.tls.ServerCredentials(s.cfg.TLSClientAuthRequired)
	}
	return []grpc.ServerOption{
		grpc.Creds(creds),
		// Authentication and authorization first: nothing else runs for a
		// caller who may not call.
		grpc.ChainUnaryInterceptor(s.authz.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(s.authz.StreamServerInterceptor(), newWatchLimit(s.cfg.NimbusMaxWatches).interceptor),
		grpc.ForceServerCodecV2(encodings),
		grpc.MaxConcurrentStreams(uint32(s.cfg.NimbusMaxStreams)),
		grpc.MaxRecvMsgSize(s.cfg.NimbusMaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinClientPing, PermitWithoutStream: true}),
		grpc.WriteBufferSize(writeBufferBytes),
		grpc.SharedWriteBuffer(true),
	}
}

// run starts every loop and server. Their stops, in the reverse order,
// hand leadership over first, then drain the servers, then end the loops.
func (s *Server) run() {
	ctx, cancel := context.WithCancel(context.Background())
	s.lc.OnClose(func() {
		cancel()
		s.lc.Wait()
	})
	for _, c := range s.view.Caches() {
		s.lc.Go(func() { _ = c.Run(ctx) })
	}
	s.lc.Go(func() { _ = s.blobs.Run(ctx) })
	s.lc.Go(func() { _ = s.blobSync.Run(ctx) })
	registered := s.register(ctx)
	s.lc.Go(func() { s.duties.Run(ctx, s.election) })
	s.lc.Go(func() { s.watchStatus(ctx) })
	s.lc.Go(func() { s.probeStore(ctx) })
	s.lc.Go(func() { s.watchSightings(ctx) })
	s.lc.Go(func() { s.view.RunStats(ctx) })
	s.lc.Go(func() { s.deposer.Run(ctx) })
	s.lc.Go(func() { s.announceReady(ctx, registered) })
	s.reloadConfig(ctx)
	s.serveMetrics()
	s.serveUI()
	s.serveHealth()
	s.serveGRPC()
	s.joinElection(ctx)
}

// register keeps this nimbus's node under /nimbuses; the channel is closed
// once it exists.
func (s *Server) register(ctx context.Context) <-chan struct{} {
	node := cluster.EphemeralNode{Path: s.sess.Paths().Nimbus(s.Addr()), Data: cluster.Encode(s.self), RecreateParent: true}
	return daemon.Register(ctx, &s.lc, s.sess, node, s.log)
}

// serveMetrics serves metrics (and pprof, if enabled) on the metrics port,
// if any, over TLS when TLS is on.
func (s *Server) serveMetrics() {
	if s.metricsLn == nil {
		return
	}
	var tlsConfig *tls.Config
	if s.tls != nil {
		tlsConfig = s.tls.ServerConfig(false) // scrapers need no certificate
	}
	daemon.ServeMetrics(&s.lc, s.metricsLn, s.reg, s.cfg.MetricsPprof, tlsConfig, "nimbus")
}

// serveGRPC serves the gRPC services. Its stop drains in-flight calls for
// up to nimbus.drain.timeout.secs, then closes what is left.
func (s *Server) serveGRPC() {
	s.lc.Go(func() {
		if err := s.grpc.Serve(s.listener); err != nil {
			s.lc.Fail(fmt.Errorf("nimbus: grpc: %w", err))
		}
	})
	s.lc.OnClose(func() {
		s.health.Shutdown()
		drained := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(s.cfg.NimbusDrainTimeout):
			s.log.Warn("drain timed out; closing connections", "timeout", s.cfg.NimbusDrainTimeout)
			s.grpc.Stop()
			<-drained
		}
	})
}

// joinElection runs the election and the syncer, which queues this nimbus
// once it holds all code. Its stop leaves the queue first of all, handing
// leadership to the next nimbus that holds all code (service.leaveFor), so
// a follower leads within a ZooKeeper notification instead of a session
// timeout.
func (s *Server) joinElection(ctx context.Context) {
	syncCtx, stopSync := context.WithCancel(ctx)
	s.lc.Go(func() { _ = s.syncer.Run(syncCtx) })
	s.lc.Go(func() { _ = s.election.Run(ctx) })
	s.lc.OnClose(func() {
		stopSync() // or it would queue this nimbus again
		leaveCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ZKSessionTimeout)
		defer cancel()
		if err := s.svc.leaveFor(leaveCtx); err != nil {
			s.log.Warn("could not leave the leader queue; the session timeout hands over", "err", err)
		}
	})
}

// announceReady logs the ready line and closes ReadyNotify once this
// nimbus is registered and the caches that answer reads are loaded.
func (s *Server) announceReady(ctx context.Context, registered <-chan struct{}) {
	v := s.view
	s.lc.Announce(ctx, s.log, "nimbus ready", func() []any {
		attrs := []any{"addr", s.Addr(), "listen", s.listener.Addr().String(), "version", version.Version}
		if s.metricsLn != nil {
			attrs = append(attrs, "metrics", s.metricsLn.Addr().String())
		}
		if s.uiLn != nil {
			attrs = append(attrs, "ui", s.uiLn.Addr().String())
		}
		if s.healthLn != nil {
			attrs = append(attrs, "health", s.healthLn.Addr().String())
		}
		return attrs
	}, registered, v.Nimbuses.Loaded(), v.Locks.Loaded(), v.Storms.Loaded(), v.Replicas.Distributions.Loaded())
}

// Addr is the address other processes dial: nimbus.host and the bound
// gRPC port. Valid after Start.
func (s *Server) Addr() string { return cluster.HostPort(s.self) }

// ReadyNotify is closed once the nimbus is registered and its caches are
// loaded.
func (s *Server) ReadyNotify() <-chan struct{} { return s.lc.Ready() }

// Err delivers a fatal error from a listener; the caller should Close.
func (s *Server) Err() <-chan error { return s.lc.Err() }

// Close stops the nimbus in an order that hands leadership over at once:
// it leaves the leader queue first (deleting its lock node, and those of
// nimbuses before the next that holds all code, so that one leads within a
// ZooKeeper notification), then drains in-flight RPCs for
// up to nimbus.drain.timeout.secs, then ends its loops, closes the code
// distributor and ends the session, which deregisters it. It is idempotent
// and safe after a failed Start.
func (s *Server) Close() { s.lc.Close() }
