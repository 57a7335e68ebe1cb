package supervisor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/hostcheck"
	"github.com/nimbusha/nimbus/logviewer"
)

// The logviewer (package logviewer, docs/ARCHITECTURE.md section 23): this
// supervisor serves its workers' logs on logviewer.port, over TLS with the
// nimbuses' client authentication when TLS is on, and keeps their sum
// within logviewer.max.sum.worker.logs.size.mb.

// listenLogviewer binds logviewer.port, unless it is -1, as the metrics
// port binds: an IP literal in storm.local.hostname means that interface
// only.
func (s *Supervisor) listenLogviewer() (err error) {
	if s.cfg.LogviewerPort == configs.PortDisabled {
		return nil
	}
	bindHost := ""
	if net.ParseIP(s.cfg.LocalHostname) != nil {
		bindHost = s.cfg.LocalHostname
	}
	if s.logviewerLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(s.cfg.LogviewerPort))); err != nil {
		return fmt.Errorf("supervisor: listen on %s %d: %w", configs.KeyLogviewerPort, s.cfg.LogviewerPort, err)
	}
	s.lc.OnClose(func() { s.logviewerLn.Close() }) // closed already if served
	switch addr := s.logviewerLn.Addr().(*net.TCPAddr); {
	case s.tls == nil && !addr.IP.IsLoopback():
		s.log.Warn("INSECURE: workers' logs served without TLS or authentication on an address others can reach; set nimbus.grpc.tls.* (README: Security)",
			"listen", addr.String())
	case s.tls != nil && !s.cfg.TLSClientAuthRequired:
		s.log.Warn("workers' logs served over TLS without client authentication: anyone who reaches the port may read them; set nimbus.grpc.tls.client.auth.required (README: Security)",
			"listen", addr.String())
	}
	return nil
}

// serveLogviewer serves the logviewer on its port, if any, and enforces
// the sum of the workers' logs, until ctx ends; Close then lets requests
// in flight finish for a few seconds.
func (s *Supervisor) serveLogviewer(ctx context.Context) error {
	if s.logviewerLn != nil {
		if err := s.serveLogs(); err != nil {
			return err
		}
	}
	s.lc.Go(func() { s.enforceLogCap(ctx) })
	return nil
}

func (s *Supervisor) serveLogs() error {
	a, err := auth.New(s.cfg, s.base)
	if err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	s.authorizers = append(s.authorizers, a)
	srv := &http.Server{
		Handler: logviewer.New(logviewer.Config{Root: logviewer.Root(s.cfg.LocalDir), Authz: a, Log: s.base,
			HostNames: s.logviewerHostNames}),
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      5 * time.Minute, // a download of a worker's whole log
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.base.Handler(), slog.LevelDebug), // scanners' broken handshakes
	}
	ln := s.logviewerLn
	if s.tls != nil {
		srv.TLSConfig = s.tls.ServerConfig(s.cfg.TLSClientAuthRequired)
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	s.lc.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.lc.Fail(fmt.Errorf("supervisor: logviewer: %w", err))
		}
	})
	s.lc.OnClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	})
	return nil
}

// logviewerHostNames are the names a logviewer request's Host may give
// besides IP addresses and localhost (the check against DNS rebinding):
// storm.local.hostname, its machine's name, and the DNS names of its
// certificate, as loaded now.
func (s *Supervisor) logviewerHostNames() []string {
	return hostcheck.Names(s.tls.Certificate(), s.cfg.LocalHostname)
}

// logviewerURL is where this supervisor's logviewer is reached, for its
// registration ("https://host:port"); empty when it serves none.
func (s *Supervisor) logviewerURL() string {
	if s.logviewerLn == nil {
		return ""
	}
	scheme := "http"
	if s.tls != nil {
		scheme = "https"
	}
	port := s.logviewerLn.Addr().(*net.TCPAddr).Port
	return scheme + "://" + net.JoinHostPort(s.cfg.LocalHostname, strconv.Itoa(port))
}

// enforceLogCap keeps the sum of the workers' logs within
// logviewer.max.sum.worker.logs.size.mb, every
// logviewer.cleanup.interval.secs, until ctx ends.
func (s *Supervisor) enforceLogCap(ctx context.Context) {
	tick := time.NewTicker(s.cfg.LogviewerCleanupInterval)
	defer tick.Stop()
	for {
		freed, err := logviewer.Enforce(logviewer.Root(s.cfg.LocalDir), int64(s.cfg.LogviewerMaxSumMB)<<20, s.runsHere)
		switch {
		case err != nil:
			s.log.Warn("cannot enforce the cap on the workers' logs", "err", err)
		case freed > 0:
			s.log.Info("deleted old worker logs", "freed_bytes", freed, "cap_mb", s.cfg.LogviewerMaxSumMB)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runsHere reports whether this supervisor runs the worker of topology on
// port: one being stopped does, until its stop returned, since its keeper
// may write its log until then.
func (s *Supervisor) runsHere(topology string, port int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.workers[port]; w != nil && w.spec.TopologyID == topology {
		return true
	}
	for w := range s.stopping {
		if w.spec.Port == port && w.spec.TopologyID == topology {
			return true
		}
	}
	return false
}
