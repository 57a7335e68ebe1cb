package supervisor

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/daemon"
)

var workersDesc = prometheus.NewDesc("supervisor_workers",
	"Workers this supervisor runs, by state (starting, running, backoff).", []string{"state"}, nil)

var restartsDesc = prometheus.NewDesc("supervisor_worker_restarts",
	"Restarts of the workers this supervisor runs now, summed.", nil, nil)

// workerCollector reads the workers at scrape time, so the metrics cannot
// drift from what the heartbeats report.
type workerCollector struct{ s *Supervisor }

func (c workerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- workersDesc
	ch <- restartsDesc
}

func (c workerCollector) Collect(ch chan<- prometheus.Metric) {
	byState := map[string]int{"starting": 0, "running": 0, "backoff": 0}
	restarts := 0
	for _, w := range c.s.info().GetWorkers() {
		byState[w.GetState()]++
		restarts += int(w.GetRestarts())
	}
	for state, n := range byState {
		ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.GaugeValue, float64(restarts))
}

// listenMetrics opens supervisor.metrics.port, unless it is -1.
func (s *Supervisor) listenMetrics() (err error) {
	if s.cfg.SupervisorMetricsPort == configs.PortDisabled {
		return nil
	}
	// As a nimbus does: an IP literal binds that interface only; a host
	// name binds every interface.
	bindHost := ""
	if net.ParseIP(s.cfg.LocalHostname) != nil {
		bindHost = s.cfg.LocalHostname
	}
	if s.metricsLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(s.cfg.SupervisorMetricsPort))); err != nil {
		return fmt.Errorf("supervisor: listen on supervisor.metrics.port %d: %w", s.cfg.SupervisorMetricsPort, err)
	}
	s.lc.OnClose(func() { s.metricsLn.Close() }) // closed already if served
	if addr := s.metricsLn.Addr().(*net.TCPAddr); s.tls == nil && !addr.IP.IsLoopback() {
		s.log.Warn("INSECURE: metrics without TLS on an address others can reach, and this supervisor fetches code without TLS; set nimbus.grpc.tls.* (README: Security)",
			"listen", addr.String(), "pprof", s.cfg.MetricsPprof)
	}
	return nil
}

// serveMetrics serves metrics (and pprof, if enabled) on the metrics port,
// if any, over TLS when TLS is on, until Close.
func (s *Supervisor) serveMetrics() {
	if s.metricsLn == nil {
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), workerCollector{s})
	var tlsConfig *tls.Config
	if s.tls != nil {
		tlsConfig = s.tls.ServerConfig(false) // scrapers need no certificate
	}
	daemon.ServeMetrics(&s.lc, s.metricsLn, reg, s.cfg.MetricsPprof, tlsConfig, "supervisor")
}
