package depose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Timing of the watch on the leader.
const (
	// probeTimeout bounds the probe of a leader whose stream broke: a
	// refusal comes back in well under a millisecond; anything slower
	// proves nothing.
	probeTimeout = time.Second
	// rewatchDelay paces new streams to a leader that proved alive (or
	// unknown) after its stream broke.
	rewatchDelay = 500 * time.Millisecond
	// Keepalive on the stream's connection: a leader whose host vanished
	// breaks the stream in about keepaliveTime+keepaliveTimeout; its
	// probe then proves nothing, and the session decides.
	keepaliveTime    = 10 * time.Second
	keepaliveTimeout = 5 * time.Second
	// refusalWindow is how long a leader's port must go on refusing, from
	// the first refusal, before the leader is challenged: a process that
	// died refuses for good, a port being re-bound does not.
	refusalWindow = 50 * time.Millisecond
	// challengeTimeout is how long a challenged leader has to answer
	// through ZooKeeper: a live one does within a watch's round trip.
	challengeTimeout = 250 * time.Millisecond
	// answerRetry paces a leader's answering after a ZooKeeper error.
	answerRetry = 250 * time.Millisecond
)

// Config is what a Deposer needs.
type Config struct {
	Session *cluster.Session
	// Locks mirrors /leader-lock: its head is the leader watched.
	Locks *cluster.DirCache[*clusterv1.NimbusInfo]
	Self  string                           // this nimbus's host:port, never watched
	Creds credentials.TransportCredentials // for the stream (TLS as this nimbus)
	// SessionTimeout (storm.zookeeper.session.timeout) is how long this
	// nimbus waits before it deposes a leader it deposed once again.
	SessionTimeout time.Duration
	// Metrics registers nimbus_depositions_total; nil registers nothing.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// Deposer watches the leader from a follower and deposes it when it is
// certainly dead. New builds it; Run runs it.
type Deposer struct {
	cfg         Config
	log         *slog.Logger
	depositions *prometheus.CounterVec
	challenges  *prometheus.CounterVec
	deposed     map[string]time.Time // when Run last deposed each leader, by address
}

// New returns a Deposer for cfg; it starts nothing.
func New(cfg Config) *Deposer {
	d := &Deposer{
		cfg: cfg,
		log: cfg.Logger.With("component", "depose"),
		depositions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nimbus_depositions_total",
			Help: "Dead leaders this nimbus deposed (deleted their lock node), by the evidence of death.",
		}, []string{"reason"}),
		challenges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nimbus_deposition_challenges_total",
			Help: "Leaders whose port refused this nimbus, challenged through ZooKeeper, by outcome: answered (alive: a network fault, not a death), unanswered (deposed), recent (deposed by this nimbus within a session timeout: left to the session).",
		}, []string{"outcome"}),
		deposed: map[string]time.Time{},
	}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(d.depositions, d.challenges)
	}
	return d
}

// Run takes this nimbus's part until ctx ends: while another nimbus leads
// it guards that leader until the queue changes; while this one heads the
// queue it answers the challenges made to it.
func (d *Deposer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		changed := d.cfg.Locks.Changed() // before reading: no change unseen
		head, ok := d.head()
		switch {
		case ok && cluster.HostPort(head.Info) == d.cfg.Self:
			d.answer(ctx, head, changed)
		case ok:
			d.guard(ctx, head, changed)
		default:
			select {
			case <-changed:
			case <-ctx.Done():
			}
		}
	}
}

// head is the head of the lock queue, unless its payload is unreadable.
func (d *Deposer) head() (cluster.LockEntry, bool) {
	q := cluster.Queue(d.cfg.Locks.Snapshot())
	if len(q) == 0 || q[0].Info == nil {
		return cluster.LockEntry{}, false
	}
	return q[0], true
}

// answer answers the challenges made to head, this nimbus, until the queue
// changes or ctx ends: proof, through ZooKeeper, that it is alive whatever
// its port does to a follower.
func (d *Deposer) answer(ctx context.Context, head cluster.LockEntry, changed <-chan struct{}) {
	for {
		watch, err := d.cfg.Session.AnswerChallenges(head.Name)
		var retry <-chan time.Time
		if err != nil {
			d.log.Debug("cannot answer challenges; retrying", "err", err)
			retry = time.After(answerRetry)
		}
		select {
		case <-watch:
		case <-retry:
		case <-changed:
			return
		case <-ctx.Done():
			return
		}
	}
}

// guard keeps a stream open to head's nimbus until the queue changes (or
// ctx ends). Each time the stream breaks it probes the address, and
// deposes head on evidence of death.
func (d *Deposer) guard(ctx context.Context, head cluster.LockEntry, changed <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr := cluster.HostPort(head.Info)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(d.cfg.Creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout, PermitWithoutStream: true}))
	if err != nil { // a malformed address: nothing to watch
		d.log.Warn("cannot watch the leader", "leader", addr, "err", err)
		select {
		case <-changed:
		case <-ctx.Done():
		}
		return
	}
	defer cc.Close()
	go func() { // owned by guard: ends with ctx, which guard cancels
		select {
		case <-changed:
			cancel()
		case <-ctx.Done():
		}
	}()
	health := healthpb.NewHealthClient(cc)
	for {
		broke := watch(ctx, health)
		if ctx.Err() != nil {
			return
		}
		evidence := probeDying(ctx, addr)
		if evidence == Dead && d.deadAfterAll(ctx, head) {
			d.depose(head, evidence, broke)
			return
		}
		d.log.Debug("stream to the leader broke; it is not provably dead", "leader", addr, "probe", evidence.String(), "err", broke)
		select {
		case <-time.After(rewatchDelay):
		case <-ctx.Done():
			return
		}
	}
}

// reprobeDelays are the waits before each probe after the first. A dying
// process closes its connections a moment before its listening socket, so
// the probe right after the stream broke may still be accepted; a
// refusal within the next 175 ms is the evidence.
var reprobeDelays = []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}

// probeDying probes addr right after its stream broke, and again after
// each of reprobeDelays until it is refused; a refusal counts (Dead) only
// if the port goes on refusing for refusalWindow. It returns what the
// probes found.
func probeDying(ctx context.Context, addr string) Evidence {
	evidence := Probe(ctx, addr, probeTimeout)
	for _, delay := range reprobeDelays {
		if evidence == Dead {
			break
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return evidence
		}
		evidence = Probe(ctx, addr, probeTimeout)
	}
	if evidence != Dead {
		return evidence
	}
	select {
	case <-time.After(refusalWindow):
	case <-ctx.Done():
		return Unknown
	}
	return Probe(ctx, addr, probeTimeout)
}

// deadAfterAll is the evidence that the probes cannot give: a port that
// refuses may belong to a live leader behind a network fault (a firewall
// rule resetting connections, a follower's stale name for it). Unless this
// nimbus deposed the same leader within a session timeout (it then leaves
// it to the session), it challenges the leader through ZooKeeper: a
// leader that answers within challengeTimeout is alive and is not
// deposed.
func (d *Deposer) deadAfterAll(ctx context.Context, head cluster.LockEntry) bool {
	addr := cluster.HostPort(head.Info)
	if at, ok := d.deposed[addr]; ok && time.Since(at) < d.cfg.SessionTimeout {
		d.challenges.WithLabelValues("recent").Inc()
		d.log.Warn("leader refuses connections again soon after this nimbus deposed it: leaving it to its session",
			"leader", addr, "deposed_ago", time.Since(at).Round(time.Millisecond))
		return false
	}
	path, err := d.cfg.Session.Challenge(head.Name)
	if err != nil {
		d.log.Debug("cannot challenge the leader; not deposing it", "leader", addr, "err", err)
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, challengeTimeout)
	defer cancel()
	answered, err := d.cfg.Session.AwaitAnswer(ctx, path)
	switch {
	case err != nil:
		d.log.Debug("cannot tell whether the leader answered; not deposing it", "leader", addr, "err", err)
		return false
	case answered:
		d.challenges.WithLabelValues("answered").Inc()
		d.log.Warn("leader refuses connections but answers through ZooKeeper: alive, not deposed (a network fault or a firewall between the nimbuses?)",
			"leader", addr)
		return false
	}
	d.challenges.WithLabelValues("unanswered").Inc()
	return true
}

// watch holds a health Watch stream on the leader's service open until it
// breaks or ctx ends, and returns why it ended.
func watch(ctx context.Context, health healthpb.HealthClient) error {
	stream, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: nimbusv1.LeaderHealthService})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			return err
		}
	}
}

// depose deletes head's lock node, by path and version, so the next
// nimbus in the queue leads now.
func (d *Deposer) depose(head cluster.LockEntry, evidence Evidence, broke error) {
	addr := cluster.HostPort(head.Info)
	err := d.cfg.Session.DeleteLock(head.Name)
	switch {
	case errors.Is(err, cluster.ErrNoNode):
		d.log.Info("dead leader already gone from the queue", "leader", addr, "node", head.Name)
		return
	case err != nil:
		d.log.Warn("cannot depose a dead leader; its session's expiry will", "leader", addr, "node", head.Name, "err", err)
		return
	}
	d.deposed[addr] = time.Now()
	d.depositions.WithLabelValues(evidence.String()).Inc()
	d.log.Warn("deposed a dead leader", "leader", addr, "epoch", head.Epoch(), "node", head.Name,
		"evidence", fmt.Sprintf("stream broke (%v), then %s for %v, and no answer through ZooKeeper within %v", broke, evidence, refusalWindow, challengeTimeout),
		"by", d.cfg.Self)
}
