package nimbus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/hostcheck"
	"github.com/nimbusha/nimbus/internal/version"
	"github.com/nimbusha/nimbus/stormapi"
	"github.com/nimbusha/nimbus/webui"
)

// The HTTP side of a nimbus (ui.port): Storm's REST API under /api/v1
// (package stormapi) and the web UI at / (package webui), answered from
// the same view as the gRPC reads, leader or not.

// listenUI opens ui.port, unless it is -1, on ui.host (or where the gRPC
// port is bound).
func (s *Server) listenUI(bindHost string) (err error) {
	cfg := s.cfg
	if cfg.UIPort == configs.PortDisabled {
		return nil
	}
	if cfg.UIHost != "" {
		bindHost = cfg.UIHost
	}
	if s.uiLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(cfg.UIPort))); err != nil {
		return fmt.Errorf("nimbus: listen on ui.port %d: %w", cfg.UIPort, err)
	}
	s.lc.OnClose(func() { s.uiLn.Close() })
	addr := s.uiLn.Addr().(*net.TCPAddr)
	switch {
	case cfg.TLSEnable:
	case !addr.IP.IsLoopback() && cfg.UIActionsEnabled:
		s.log.Warn("INSECURE: the REST API without TLS on an address others can reach: anyone who reaches it may kill topologies; set nimbus.grpc.tls.* or ui.actions.enabled: false (README: Security)",
			"listen", addr.String())
	default:
		s.log.Warn("the REST API and web UI are plaintext (no TLS): every local user and page may call them; only requests whose Host names this nimbus are answered (README: Security)",
			"listen", addr.String())
	}
	return nil
}

// uiHostNames are the names a REST request's Host may give besides IP
// addresses and localhost (stormapi's check against DNS rebinding): the
// names this nimbus is configured as, its machine's name, and the DNS
// names of its certificate, as loaded now.
func (s *Server) uiHostNames() []string {
	return hostcheck.Names(s.tls.Certificate(), s.cfg.NimbusHost, s.cfg.UIHost)
}

// buildUI makes the REST API: reads from the service in process, actions
// through the Go SDK to the leader, as this nimbus (which forwards each
// caller's principal; auth.Forward).
func (s *Server) buildUI() error {
	if s.uiLn == nil {
		return nil
	}
	leader, err := client.New([]string{s.Addr()}, client.WithTransportCredentials(s.tls.ClientCredentials()),
		client.WithLogger(s.base))
	if err != nil {
		return fmt.Errorf("nimbus: the REST API's client: %w", err)
	}
	s.lc.OnClose(func() { leader.Close() })
	// Seeds that do not report are Offline, as in Storm; not the default
	// seed, which a nimbus that was given none would always list.
	var seeds []string
	if src, set := s.cfg.Sources[configs.KeyNimbusSeeds]; set && src.Kind != configs.FromDefault {
		seeds = s.cfg.SeedAddrs()
	}
	api := stormapi.New(stormapi.Config{
		Reads: s.svc, Actions: leader, State: s.uiState, Authz: s.authz, Seeds: seeds, HostNames: s.uiHostNames,
		ActionsEnabled: s.cfg.UIActionsEnabled, Version: version.Version, Log: s.log, Metrics: s.reg,
		// Its client presents this nimbus's certificate whenever it has one.
		LendsIdentity: s.tls != nil && s.tls.Certificate() != nil,
	})
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("/", webui.Handler())
	s.ui = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// Failed handshakes and broken connections: scanners would fill
		// the log at any higher level.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if s.tls != nil {
		s.ui.TLSConfig = s.tls.ServerConfig(s.cfg.TLSClientAuthRequired)
	}
	return nil
}

// serveUI serves the REST API and the UI until Close, which lets
// in-flight requests finish for up to nimbus.drain.timeout.secs.
func (s *Server) serveUI() {
	if s.ui == nil {
		return
	}
	// Bounded before the handshake: a connection waiting for a slot costs
	// the kernel's backlog, not the nimbus's memory (ui.max.connections).
	ln := netutil.LimitListener(s.uiLn, s.cfg.UIMaxConnections)
	if s.ui.TLSConfig != nil {
		ln = tls.NewListener(ln, s.ui.TLSConfig)
	}
	s.lc.Go(func() {
		if err := s.ui.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.lc.Fail(fmt.Errorf("nimbus: ui: %w", err))
		}
	})
	s.lc.OnClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.NimbusDrainTimeout)
		defer cancel()
		if s.ui.Shutdown(ctx) != nil {
			s.ui.Close()
		}
	})
}

// uiState is what the REST API says of leadership and freshness.
func (s *Server) uiState() stormapi.State {
	var st stormapi.State
	if head, _, ok := s.view.Leader(); ok {
		st.Leader = head.GetHost() + ":" + strconv.Itoa(int(head.GetPort()))
	}
	st.LeaderlessFor, st.CacheAge = s.sightings.since(time.Now())
	st.Leads = s.election.Current() != nil
	return st
}

// sightings are since when this nimbus has seen no leader and since when
// it has had no ZooKeeper session (zero times when it has), kept by
// watchSightings for the REST API and nimbus_leaderless_seconds.
type sightings struct {
	mu              sync.Mutex
	leaderlessSince time.Time
	sessionLostAt   time.Time
}

// since is how long this nimbus has seen no leader, and has had no
// session, at now.
func (g *sightings) since(now time.Time) (leaderless, noSession time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.leaderlessSince.IsZero() {
		leaderless = now.Sub(g.leaderlessSince)
	}
	if !g.sessionLostAt.IsZero() {
		noSession = now.Sub(g.sessionLostAt)
	}
	return leaderless, noSession
}

// see records what this nimbus sees at now.
func (g *sightings) see(now time.Time, hasLeader, hasSession bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case hasLeader:
		g.leaderlessSince = time.Time{}
	case g.leaderlessSince.IsZero():
		g.leaderlessSince = now
	}
	switch {
	case hasSession:
		g.sessionLostAt = time.Time{}
	case g.sessionLostAt.IsZero():
		g.sessionLostAt = now
	}
}

// newSightings starts leaderless (nothing is read yet) and registers
// nimbus_leaderless_seconds.
func newSightings(reg prometheus.Registerer, start time.Time) *sightings {
	g := &sightings{leaderlessSince: start}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "nimbus_leaderless_seconds",
		Help: "How long this nimbus has seen no leader in the lock queue (0 while there is one).",
	}, func() float64 {
		leaderless, _ := g.since(time.Now())
		return leaderless.Seconds()
	}))
	return g
}

// watchSightings keeps s.sightings as the lock queue and the session
// change, until ctx ends.
func (s *Server) watchSightings(ctx context.Context) {
	for {
		locksChanged := s.view.Locks.Changed() // before reading: no change unseen
		state, _, sessionChanged := s.sess.State()
		_, _, hasLeader := s.view.Leader()
		s.sightings.see(time.Now(), hasLeader, state == cluster.StateHasSession)
		select {
		case <-locksChanged:
		case <-sessionChanged:
		case <-ctx.Done():
			return
		}
	}
}
