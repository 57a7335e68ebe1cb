package nimbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// errHandOverRefused: the hand-over asked for cannot be done; nothing was.
var errHandOverRefused = apierr.Sentinel("nimbus: hand-over refused", apierr.ErrWrongStatus)

// handoverWait bounds how long a hand-over waits for the new leader to
// act once this nimbus stepped down: it checks its code first, which takes
// milliseconds; a target that takes longer is reported, not waited for.
const handoverWait = 10 * time.Second

// HandOver hands leadership to another nimbus on purpose, in these steps:
// this nimbus must lead (a follower answers NOT_LEADER); choose the target,
// the one named or the next eligible in the queue, refusing one that
// cannot lead and saying why; step down to it (one ZooKeeper write deletes
// this nimbus's lock node and those of the nimbuses passed over, which
// queue again behind); wait until the target's leader health is SERVING;
// answer who leads and how long nobody did. Naming the leader itself
// changes nothing and answers at once, so a retried hand-over is harmless.
func (s *service) HandOver(ctx context.Context, req *nimbusv1.HandOverRequest) (*nimbusv1.HandOverResponse, error) {
	if err := validate.HandOver(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	term, err := s.leaderTerm(ctx)
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	resp := &nimbusv1.HandOverResponse{From: s.self, FromEpoch: term.Epoch(), To: s.self, ToEpoch: term.Epoch()}
	if req.GetTo() == s.self {
		return resp, nil
	}
	target, err := s.handoverTarget(req.GetTo())
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	start := time.Now()
	if err := s.election.StepDown(ctx, target.Name); err != nil {
		return nil, apistatus.ToStatus(handoverFailed(target, err))
	}
	resp.To, resp.ToEpoch = cluster.HostPort(target.Info), target.Epoch()
	if err := s.awaitLeading(ctx, resp.To); err != nil {
		return nil, apistatus.ToStatus(fmt.Errorf("%w: stepped down to %s, which has not reported leading: %v", apierr.ErrOutcomeUnknown, resp.To, err))
	}
	resp.LeaderlessMs = time.Since(start).Milliseconds()
	s.log.Info("handed leadership over", "to", resp.To, "epoch", resp.ToEpoch, "leaderless_ms", resp.LeaderlessMs)
	return resp, nil
}

// handoverFailed says what a failed step-down means to the caller.
func handoverFailed(target cluster.LockEntry, err error) error {
	to := cluster.HostPort(target.Info)
	switch {
	case errors.Is(err, leader.ErrNotLeading):
		return fmt.Errorf("%w: this nimbus stopped leading before it could hand over; nothing was done", apierr.ErrUnavailable)
	case errors.Is(err, leader.ErrHandOverUnderWay):
		return fmt.Errorf("%w: another hand-over is under way; nothing was done", errHandOverRefused)
	case errors.Is(err, leader.ErrNextNotQueued):
		return fmt.Errorf("%w: %s left the leader queue during the hand-over; nothing changed", errHandOverRefused, to)
	}
	// The node went (ErrNodeGone), or ZooKeeper did not answer in time:
	// leadership may have moved, not necessarily to the target.
	return fmt.Errorf("%w: handing over to %s: %v", apierr.ErrOutcomeUnknown, to, err)
}

// awaitLeading waits, within handoverWait, until the nimbus at addr says
// it leads: its leader health is SERVING.
func (s *service) awaitLeading(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, handoverWait)
	defer cancel()
	health, err := s.peers.Health(addr)
	if err != nil {
		return err
	}
	stream, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: nimbusv1.LeaderHealthService})
	if err != nil {
		return err
	}
	for {
		st, err := stream.Recv()
		if err != nil {
			return err
		}
		if st.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
	}
}

// leaveFor is how a stopping leader leaves the queue: it hands over to the
// next eligible nimbus, passing over those that lack code, or just leaves
// when none can lead.
func (s *service) leaveFor(ctx context.Context) error {
	if s.election.Current() == nil {
		return s.election.Leave(ctx)
	}
	next, err := s.handoverTarget("")
	if err != nil {
		s.log.Warn("stopping leader: no nimbus can take over; leaving the queue", "err", err)
		return s.election.Leave(ctx)
	}
	if err := s.election.LeaveFor(ctx, next.Name); err != nil {
		s.log.Warn("stopping leader: could not hand over; leaving the queue", "to", cluster.HostPort(next.Info), "err", err)
		return s.election.Leave(ctx)
	}
	s.log.Info("stopping leader handed over", "to", cluster.HostPort(next.Info), "epoch", next.Epoch())
	return nil
}

// handoverTarget chooses the lock node to hand leadership to, as this
// nimbus's caches see the cluster: the nimbus at to, or the next eligible
// one when to is "".
func (s *service) handoverTarget(to string) (cluster.LockEntry, error) {
	return chooseTarget(handoverView{
		self:       s.self,
		queue:      cluster.Queue(s.view.Locks.Snapshot()),
		nimbuses:   s.view.Failover().GetNimbuses(),
		seeds:      s.cfg.SeedAddrs(),
		registered: s.view.Nimbuses.Snapshot(),
	}, to)
}

// handoverView is what choosing a target reads.
type handoverView struct {
	self       string
	queue      []cluster.LockEntry
	nimbuses   []*nimbusv1.NimbusSummary        // who holds what code
	seeds      []string                         // nimbus.seeds, host:port
	registered map[string]*clusterv1.NimbusInfo // registrations, by host:port
}

// chooseTarget picks, from v, the lock node to hand over to: the nimbus at
// to, refused (naming why) when it is unknown, not registered, not queued
// or missing code; or, when to is "", the first nimbus queued behind self
// that is registered and holds every live topology's code, refused when
// there is none (naming why each could not lead).
func chooseTarget(v handoverView, to string) (cluster.LockEntry, error) {
	me := slices.IndexFunc(v.queue, func(e cluster.LockEntry) bool { return cluster.HostPort(e.Info) == v.self })
	if me < 0 {
		return cluster.LockEntry{}, fmt.Errorf("%w: this nimbus's lock node is not in its view of the queue yet; try again", apierr.ErrUnavailable)
	}
	behind := v.queue[me+1:]
	if to == "" {
		var reasons []string
		for _, e := range behind {
			why := v.cannotLead(cluster.HostPort(e.Info))
			if why == "" {
				return e, nil
			}
			reasons = append(reasons, why)
		}
		if len(reasons) == 0 {
			return cluster.LockEntry{}, fmt.Errorf("%w: no other nimbus is queued for leadership", errHandOverRefused)
		}
		return cluster.LockEntry{}, fmt.Errorf("%w: no nimbus can take over: %s", errHandOverRefused, strings.Join(reasons, "; "))
	}
	i := slices.IndexFunc(behind, func(e cluster.LockEntry) bool { return cluster.HostPort(e.Info) == to })
	if i < 0 {
		return cluster.LockEntry{}, v.notQueued(to)
	}
	if why := v.cannotLead(to); why != "" {
		return cluster.LockEntry{}, fmt.Errorf("%w: %s", errHandOverRefused, why)
	}
	return behind[i], nil
}

// cannotLead says why the queued nimbus at addr could not lead, or "".
func (v handoverView) cannotLead(addr string) string {
	if v.registered[addr] == nil {
		return addr + " is queued but not registered"
	}
	i := slices.IndexFunc(v.nimbuses, func(n *nimbusv1.NimbusSummary) bool { return nimbusAddr(n) == addr })
	if i < 0 {
		return addr + " is queued but not yet in the cluster summary"
	}
	if missing := v.nimbuses[i].GetMissingTopologyIds(); len(missing) > 0 {
		return fmt.Sprintf("%s lacks the code of %d live topologies (%s)", addr, len(missing), shortList(missing))
	}
	return ""
}

// notQueued says why to, not in the queue behind self, cannot take over.
func (v handoverView) notQueued(to string) error {
	switch {
	case v.registered[to] != nil:
		why := "it queues once it holds every live topology's code"
		if r := v.cannotLead(to); r != "" {
			why = r
		}
		return fmt.Errorf("%w: %s is registered but not queued for leadership: %s", errHandOverRefused, to, why)
	case slices.Contains(v.seeds, to):
		return fmt.Errorf("%w: %s is in nimbus.seeds but not registered: is it running?", errHandOverRefused, to)
	}
	var known []string
	for addr, reg := range v.registered {
		if reg != nil {
			known = append(known, addr)
		}
	}
	slices.Sort(known)
	return fmt.Errorf("%w: no nimbus %s: the registered nimbuses are %s", apierr.ErrNotFound, to, strings.Join(known, ", "))
}

func nimbusAddr(n *nimbusv1.NimbusSummary) string {
	return cluster.HostPort(&clusterv1.NimbusInfo{Host: n.GetHost(), Port: n.GetPort()})
}

// shortList shows at most five ids, and how many more.
func shortList(ids []string) string {
	const shown = 5
	if len(ids) <= shown {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shown], ", "), len(ids)-shown)
}
