package stormapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics count the API's requests by route (its pattern, so the label
// set is bounded) and HTTP code, and time them.
type metrics struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nimbus_http_requests_total",
			Help: "REST API requests answered, by route and HTTP code.",
		}, []string{"route", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nimbus_http_request_duration_seconds",
			Help:    "Time to answer a REST API request, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 0.1 ms to 26 s
		}, []string{"route"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.seconds)
	}
	return m
}

// observe wraps h so that each answer is counted under route.
func (m *metrics) observe(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &codeRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		m.seconds.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// codeRecorder remembers the code a handler answered with.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (c *codeRecorder) WriteHeader(code int) {
	c.code = code
	c.ResponseWriter.WriteHeader(code)
}
