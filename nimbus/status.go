package nimbus

import (
	"context"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/notify"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// watchStatus keeps health and metrics in step with the session, the
// caches and this nimbus's own term, and logs leader changes it sees.
func (s *Server) watchStatus(ctx context.Context) {
	v, m := s.view, s.metrics
	var lastEpoch int64 // zero: no leader seen yet
	for {
		// Take every wake-up channel before reading what it guards: a
		// change in between would otherwise go unseen until the next one.
		state, _, sessChanged := s.sess.State()
		elected, locks, nimbuses := s.election.Changed(), v.locks.Changed(), v.nimbuses.Changed()
		connected := state == zk.StateHasSession
		loaded := notify.Closed(v.nimbuses.Loaded()) && notify.Closed(v.locks.Loaded()) && notify.Closed(v.storms.Loaded())
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

func setServing(h *health.Server, service string, ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	h.SetServingStatus(service, st)
}

// boolFloat is a gauge's value for b.
func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
