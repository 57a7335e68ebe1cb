package leading

import "github.com/prometheus/client_golang/prometheus"

// Metrics are what the leader's duties export; a follower's are those of
// its last term (the placement gauges are 0).
type Metrics struct {
	// Standbys that could take over right now.
	eligibleStandbys prometheus.Gauge
	// How long each scheduling round takes, writes included.
	scheduleSeconds prometheus.Histogram
	// After each round: what could not be placed.
	unplacedSlots      prometheus.Gauge
	unplacedTopologies prometheus.Gauge
}

// NewMetrics makes the duties' metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		eligibleStandbys: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nimbus_eligible_standbys",
			Help: "On the leader: live nimbuses other than the leader that hold all code (0 = no failover possible).",
		}),
		scheduleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nimbus_schedule_duration_seconds",
			Help:    "On the leader: time of one scheduling round over every topology and supervisor, writes included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms to 4 s
		}),
		unplacedSlots: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nimbus_unplaced_slots",
			Help: "On the leader: workers the topologies should have for which the scheduler found no free slot, summed (0 on followers).",
		}),
		unplacedTopologies: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nimbus_unplaced_topologies",
			Help: "On the leader: topologies that lack at least one slot (0 on followers).",
		}),
	}
	reg.MustRegister(m.eligibleStandbys, m.scheduleSeconds, m.unplacedSlots, m.unplacedTopologies)
	return m
}
