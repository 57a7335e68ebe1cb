package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/bittorrent" // storm.codedistributor.class: bittorrent
	_ "github.com/nimbusha/nimbus/codedistributor/hdfs"       // storm.codedistributor.class: hdfs
	_ "github.com/nimbusha/nimbus/codedistributor/localfs"    // the default backend
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// resync is the safety period of the reconcile loop; changes wake it at once.
const resync = 10 * time.Second

// Supervisor is one supervisor daemon. New builds it and starts nothing;
// Start brings it up; Close stops its workers and takes it down.
type Supervisor struct {
	cfg  *configs.Config
	base *slog.Logger
	log  *slog.Logger

	id          string
	dir         string
	lock        *os.File
	started     time.Time
	sess        *cluster.Session
	store       *codedistributor.Store
	peers       *codedistributor.Peers
	dist        codedistributor.Distributor
	fetcher     *codedistributor.Fetcher
	assignments *cluster.DirCache[*clusterv1.Assignment]
	spawn       *spawner
	metrics     *http.Server // nil when supervisor.metrics.port is -1
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	// The reconcile loop stops first, so workers are stopped while this
	// supervisor is still registered and heartbeating.
	stopReconcile context.CancelFunc
	reconciled    chan struct{}
	wake          chan struct{}
	beat          chan struct{}
	lost          chan struct{} // a heartbeat found the node gone
	ready         chan struct{}
	closeOnce     sync.Once

	mu      sync.Mutex
	workers map[int32]*worker // by port
}

// New returns a supervisor for cfg, which must be valid.
func New(cfg *configs.Config, logger *slog.Logger) *Supervisor {
	return &Supervisor{
		cfg: cfg, base: logger, log: logger.With("component", "supervisor"),
		wake: make(chan struct{}, 1), beat: make(chan struct{}, 1), lost: make(chan struct{}, 1), ready: make(chan struct{}),
		workers: map[int32]*worker{},
	}
}

// ID is the supervisor's stable id; valid after Start.
func (s *Supervisor) ID() string { return s.id }

// ReadyNotify is closed once the supervisor is registered and has read
// its assignments.
func (s *Supervisor) ReadyNotify() <-chan struct{} { return s.ready }

// Start loads the id, connects to ZooKeeper, registers and starts the
// heartbeat and reconcile loops. On error everything started is stopped.
func (s *Supervisor) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	cfg := s.cfg
	s.started = time.Now()
	s.dir = filepath.Join(cfg.LocalDir, "supervisor")
	if err := os.MkdirAll(filepath.Join(s.dir, "workers"), 0o755); err != nil {
		return fmt.Errorf("supervisor: storm.local.dir %s: %w", cfg.LocalDir, err)
	}
	// One supervisor per local dir: two would share an id, take each
	// other's registration and start workers on the same ports.
	if s.lock, err = os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644); err != nil {
		return err
	}
	if err := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("supervisor: %s is in use by another supervisor: %w", s.dir, err)
	}
	if s.id, err = loadID(s.dir); err != nil {
		return err
	}
	s.log = s.log.With("supervisor_id", s.id)
	if s.store, err = codedistributor.OpenStore(s.dir); err != nil {
		return err
	}
	s.sess, err = cluster.Connect(ctx, cluster.SessionConfig{
		Servers: cfg.ZKServers(), SessionTimeout: cfg.ZKSessionTimeout, ConnectTimeout: cfg.ZKConnectionTimeout,
		Root: cfg.ZKRoot, Logger: s.base,
	})
	if err != nil {
		return err
	}
	paths := s.sess.Paths()
	if err := s.sess.EnsureDirs(paths.Supervisors()); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	s.peers = codedistributor.NewPeers()
	params := codedistributor.Params{Config: cfg, Session: s.sess, Peers: s.peers, Store: s.store,
		OnCorrupt: func(string) { s.nudge() }, Logger: s.base}
	if s.dist, err = codedistributor.New(cfg.CodeDistributorClass, params); err != nil {
		return err
	}
	s.fetcher = &codedistributor.Fetcher{Params: params, Dist: s.dist, Store: s.store}
	s.assignments = cluster.NewDirCache(s.sess, paths.Assignments(), func() *clusterv1.Assignment { return new(clusterv1.Assignment) }, s.base)
	s.spawn = newSpawner()
	metricsAddr, err := s.serveMetrics()
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	registered := make(chan struct{})
	var once sync.Once
	s.wg.Go(func() { _ = s.assignments.Run(runCtx) })
	s.wg.Go(func() {
		// The heartbeat rewrites the node; Keep (re)creates it, and its
		// directory if the root was deleted by hand, when a heartbeat finds
		// it gone.
		cluster.EphemeralNode{Path: paths.Supervisor(s.id), Data: cluster.Encode(s.info()), RecreateParent: true,
			OwnerWrites: true, Lost: s.lost,
			Ready: func() {
				once.Do(func() { close(registered) })
				s.heartbeatSoon() // the node was (re)created with stale data
			}}.Keep(runCtx, s.sess, s.log)
	})
	s.wg.Go(func() { s.heartbeats(runCtx) })
	reconcileCtx, stopReconcile := context.WithCancel(runCtx)
	s.stopReconcile = stopReconcile
	s.reconciled = make(chan struct{})
	go func() {
		defer close(s.reconciled)
		s.reconcileLoop(reconcileCtx)
	}()
	s.wg.Go(func() {
		for _, c := range []<-chan struct{}{registered, s.assignments.Loaded()} {
			select {
			case <-c:
			case <-runCtx.Done():
				return
			}
		}
		s.log.Info("supervisor ready", "id", s.id, "host", cfg.LocalHostname, "slots", cfg.SupervisorSlotsPorts,
			"metrics", metricsAddr, "version", version.Version)
		close(s.ready)
	})
	return nil
}

// Close stops every worker (SIGTERM, then SIGKILL after
// supervisor.worker.shutdown.sleep.secs), then deregisters. Idempotent.
func (s *Supervisor) Close() {
	s.closeOnce.Do(func() {
		if s.stopReconcile != nil {
			s.stopReconcile() // it stops the workers as it returns
			<-s.reconciled
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.metrics != nil {
			s.metrics.Close()
		}
		s.wg.Wait()
		if s.spawn != nil {
			s.spawn.close()
		}
		if s.dist != nil {
			s.dist.Close()
		}
		if s.peers != nil {
			s.peers.Close()
		}
		if s.sess != nil {
			s.sess.Close()
		}
		if s.lock != nil {
			s.lock.Close()
		}
		s.log.Info("supervisor stopped")
	})
}

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
		Version: version.Version, LastHeartbeatUnixMs: time.Now().UnixMilli(),
	}
	for _, p := range s.cfg.SupervisorSlotsPorts {
		info.SlotPorts = append(info.SlotPorts, int32(p))
	}
	s.mu.Lock()
	for port, w := range s.workers {
		info.UsedPorts = append(info.UsedPorts, port)
		info.Workers = append(info.Workers, w.status())
	}
	s.mu.Unlock()
	sort.Slice(info.UsedPorts, func(i, j int) bool { return info.UsedPorts[i] < info.UsedPorts[j] })
	sort.Slice(info.Workers, func(i, j int) bool { return info.Workers[i].GetPort() < info.Workers[j].GetPort() })
	return info
}

// heartbeats writes this supervisor's state every
// supervisor.heartbeat.frequency.secs and when a worker changes state: one
// write per heartbeat, and no other request (nimbuses read supervisors'
// nodes when they appear and the leader now and then, never per write).
func (s *Supervisor) heartbeats(ctx context.Context) {
	path := s.sess.Paths().Supervisor(s.id)
	tick := time.NewTicker(s.cfg.SupervisorHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.beat:
		}
		if state, _, _ := s.sess.State(); state != zk.StateHasSession {
			continue // workers keep running; the next beat after reconnecting tells
		}
		_, err := s.sess.Conn().Set(path, cluster.Encode(s.info()), -1)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			select {
			case s.lost <- struct{}{}: // Keep creates it again
			default:
			}
		case err != nil:
			s.log.Debug("heartbeat failed", "err", err)
		}
	}
}

// desiredWorker is what the assignments ask of one of this supervisor's
// ports.
type desiredWorker struct {
	topologyID string
	digest     []byte
	executors  string
}

// desired reads this supervisor's part of every assignment.
func (s *Supervisor) desired() map[int32]desiredWorker {
	byPort := map[int32]map[string][]*clusterv1.Executor{}
	digests := map[string][]byte{}
	mine := map[int32]bool{} // an old assignment may name a port no longer ours
	for _, p := range s.cfg.SupervisorSlotsPorts {
		mine[int32(p)] = true
	}
	for id, a := range s.assignments.Snapshot() {
		if a == nil {
			continue
		}
		for _, ea := range a.GetExecutors() {
			if ea.GetSlot().GetSupervisorId() != s.id || !mine[ea.GetSlot().GetPort()] {
				continue
			}
			port := ea.GetSlot().GetPort()
			if byPort[port] == nil {
				byPort[port] = map[string][]*clusterv1.Executor{}
			}
			byPort[port][id] = append(byPort[port][id], ea.GetExecutor())
			digests[id] = a.GetCodeMetaDigest()
		}
	}
	out := map[int32]desiredWorker{}
	for port, tops := range byPort {
		// A slot hosts one topology; should two claim it, take one
		// deterministically and let the leader sort it out.
		ids := make([]string, 0, len(tops))
		for id := range tops {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		id := ids[0]
		out[port] = desiredWorker{topologyID: id, digest: digests[id], executors: formatExecutors(tops[id])}
	}
	return out
}

// formatExecutors renders STORM_EXECUTORS: component[start-end],...
func formatExecutors(execs []*clusterv1.Executor) string {
	sort.Slice(execs, func(i, j int) bool {
		if execs[i].GetComponentId() != execs[j].GetComponentId() {
			return execs[i].GetComponentId() < execs[j].GetComponentId()
		}
		return execs[i].GetTaskStart() < execs[j].GetTaskStart()
	})
	parts := make([]string, len(execs))
	for i, e := range execs {
		parts[i] = fmt.Sprintf("%s[%d-%d]", e.GetComponentId(), e.GetTaskStart(), e.GetTaskEnd())
	}
	return strings.Join(parts, ",")
}

// workerSpecFor builds the command of a desired worker from its
// topology's spec, installed with the code.
func (s *Supervisor) workerSpecFor(port int32, d desiredWorker) (workerSpec, error) {
	codeDir := s.store.Dir(d.topologyID)
	data, err := os.ReadFile(filepath.Join(codeDir, codedistributor.SpecFile))
	if err != nil {
		return workerSpec{}, err
	}
	spec := new(nimbusv1.TopologySpec)
	if err := proto.Unmarshal(data, spec); err != nil {
		return workerSpec{}, fmt.Errorf("spec of %s: %w", d.topologyID, err)
	}
	r := strings.NewReplacer("{code_dir}", codeDir, "{port}", fmt.Sprint(port), "{topology_id}", d.topologyID)
	argv := make([]string, len(spec.GetWorkerCommand()))
	for i, a := range spec.GetWorkerCommand() {
		argv[i] = r.Replace(a)
	}
	if len(argv) == 0 {
		return workerSpec{}, fmt.Errorf("topology %s has no worker command", d.topologyID)
	}
	// The artifact is often the program itself.
	_ = os.Chmod(filepath.Join(codeDir, codedistributor.ArtifactFile), 0o755)
	return workerSpec{
		TopologyID: d.topologyID, Port: port, Executors: d.executors, Argv: argv, CodeDir: codeDir,
		LogPath: filepath.Join(s.dir, "workers", fmt.Sprintf("%s-%d.log", d.topologyID, port)),
	}, nil
}
