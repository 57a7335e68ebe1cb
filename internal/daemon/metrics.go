package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsHandler serves a daemon's metrics port: Prometheus metrics from g
// at /metrics and, with withPprof (storm.metrics.pprof.enable), the Go
// profiler at /debug/pprof/: it shows what a process holds in memory, so it
// is served only when asked for.
func MetricsHandler(g prometheus.Gatherer, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	if !withPprof {
		return mux
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// ServeMetrics serves MetricsHandler(g, withPprof) on ln, over TLS when
// tlsConfig is not nil, until lc closes; a failure of the listener is lc's
// fatal error. name prefixes the error.
func ServeMetrics(lc *Lifecycle, ln net.Listener, g prometheus.Gatherer, withPprof bool, tlsConfig *tls.Config, name string) {
	srv := &http.Server{Handler: MetricsHandler(g, withPprof), ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	lc.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			lc.Fail(fmt.Errorf("%s: metrics: %w", name, err))
		}
	})
	lc.OnClose(func() { srv.Close() })
}
