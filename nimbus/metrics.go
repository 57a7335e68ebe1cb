package nimbus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/nimbus/view"
)

// metrics are what an operator watches on a nimbus.
type metrics struct {
	isLeader      prometheus.Gauge
	leaderChanges prometheus.Counter
	epoch         prometheus.Gauge
	zkConnected   prometheus.Gauge
	// Code served by this nimbus's CodeService.
	codeSent prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nimbus_is_leader",
			Help: "1 while this nimbus leads, 0 otherwise.",
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nimbus_leader_changes_seen_total",
			Help: "Leader changes (new epochs) this nimbus has seen.",
		}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nimbus_leader_epoch",
			Help: "The epoch of the current leader as this nimbus sees it; 0 when there is none.",
		}),
		zkConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nimbus_zookeeper_connected",
			Help: "1 while this nimbus has a ZooKeeper session, 0 otherwise.",
		}),
		codeSent: prometheus.NewCounter(codedistributor.SentBytesOpts("grpc")),
	}
	reg.MustRegister(m.isLeader, m.leaderChanges, m.epoch, m.zkConnected, m.codeSent)
	return m
}

// registerSessionMetrics registers the metrics read from the ZooKeeper
// session at scrape time.
func registerSessionMetrics(reg prometheus.Registerer, sess *cluster.Session) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "nimbus_zookeeper_abandoned_calls",
		Help: "ZooKeeper calls made for requests that ZooKeeper did not answer within the request's deadline " +
			"and that are still out; past cluster.MaxAbandoned (32) new calls fail fast. 0 while ZooKeeper keeps up.",
	}, func() float64 { return float64(sess.Abandoned()) }))
}

// registerLostMetrics exports how many topologies are LOST (forget.go).
func registerLostMetrics(reg prometheus.Registerer, v *view.View) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "nimbus_topologies_lost",
		Help: "Topologies marked LOST: no nimbus and no supervisor holds their code (stormctl admin forget removes them).",
	}, func() float64 { return float64(len(codesync.LostMarks(v.Storms.Snapshot(), v.Lost.Snapshot()))) }))
}
