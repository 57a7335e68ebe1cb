package leading

import (
	"log/slog"
	"time"

	"github.com/nimbusha/nimbus/nimbus/view"
)

// standbys exports how many standbys could take over, every round, and
// warns, once per spell, when none could for longer than wait
// (configs.Config.ReplicationLogWait): a failure of this leader would then
// leave the cluster without one. Right after a submission the followers
// lack the code while they fetch it, which is no news.
type standbys struct {
	view    *view.View // Failover: who could lead
	metrics *Metrics
	wait    time.Duration
	log     *slog.Logger

	noneSince time.Time // when the standbys last fell to 0; zero while there are some
	warned    bool
	looked    time.Time // when it last looked
}

func newStandbys(cfg Config, log *slog.Logger) *standbys {
	return &standbys{view: cfg.View, metrics: cfg.Metrics, wait: cfg.Nimbus.ReplicationLogWait(), log: log}
}

// standbysLookEvery is how often, at most, the leader looks at which
// nimbuses could take over: a look passes over every topology, and rounds
// come with every change.
const standbysLookEvery = time.Second

// round sets the gauge and warns when due; it returns when to look again
// for both to be on time (zero if nothing is due).
func (s *standbys) round(r roundState) time.Time {
	now := r.now
	if next := s.looked.Add(standbysLookEvery); now.Before(next) {
		return next
	}
	s.looked = now
	summary := s.view.Failover()
	s.metrics.eligibleStandbys.Set(float64(summary.GetEligibleStandbys()))
	if summary.GetEligibleStandbys() > 0 || len(summary.GetNimbuses()) == 0 {
		s.noneSince, s.warned = time.Time{}, false
		return time.Time{}
	}
	if s.noneSince.IsZero() {
		s.noneSince = now
	}
	if s.warned {
		return time.Time{}
	}
	if due := s.noneSince.Add(s.wait); now.Before(due) {
		return due
	}
	s.log.Warn("no standby nimbus holds all code: a failure of this leader cannot fail over",
		"nimbuses", len(summary.GetNimbuses()), "blocked_by", summary.GetLeadershipBlockedBy(),
		"for", now.Sub(s.noneSince).Round(time.Millisecond), "wait", s.wait)
	s.warned = true
	return time.Time{}
}

// stop leaves nimbus_eligible_standbys as last seen: 0 on a follower would
// read as "no failover possible" to an alert on it.
func (s *standbys) stop() {}
