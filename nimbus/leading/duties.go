package leading

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/clusterid"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/view"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Config is what the leader's duties read and write.
type Config struct {
	Session *cluster.Session // fresh reads, and the operations a term writes
	View    *view.View       // the caches each round reads
	// Dist removes what a topology stored in the backend, and lists what
	// it holds for the sweep (codedistributor.Lister).
	Dist codedistributor.Distributor
	// Pending reports whether id is a submission in progress on this
	// nimbus: its distribution is not abandoned.
	Pending func(id string) bool
	// SweepBlobs tidies what the backend keeps of blobs, every
	// nimbus.code.sync.freq.secs, within the term (nil: nothing to do).
	SweepBlobs func(ctx context.Context)
	// Actions wakes a round: a kill, a rebalance, a submission that ended.
	Actions <-chan struct{}
	Nimbus  *configs.Config // the nimbus's settings: timeouts, periods, the node budget
	// ClusterID is the cluster this nimbus belongs to: the id the first
	// cluster version names (clusterVersion).
	ClusterID *clusterid.Memory
	// Snapshot writes a snapshot of the cluster to w and returns its zxid
	// (package snapshot); SnapshotDir is where the leader keeps them. Nil:
	// the leader saves none.
	Snapshot    func(ctx context.Context, w io.Writer) (zxid int64, err error)
	SnapshotDir string
	Metrics     *Metrics
	Logger      *slog.Logger
}

// Duties does the leader's duties for every term this nimbus holds.
type Duties struct {
	cfg Config
	log *slog.Logger
}

// New returns the duties of cfg; it starts nothing.
func New(cfg Config) *Duties {
	return &Duties{cfg: cfg, log: cfg.Logger.With("component", "nimbus")}
}

// Run does the duties of each term election gives this nimbus, under the
// term's context, until ctx ends.
func (d *Duties) Run(ctx context.Context, election *leader.Election) {
	for {
		term, err := election.Await(ctx)
		if err != nil {
			return
		}
		d.runTerm(term)
	}
}

// A duty is one part of a term's work, started when the term starts.
type duty interface {
	// round does its part of one round and returns when it needs the
	// next (zero: only when something changes).
	round(r roundState) time.Time
	// stop ends the duty with its term: what it exported as the leader's
	// is taken back.
	stop()
}

// roundState is what every duty of one round reads.
type roundState struct {
	now    time.Time
	storms map[string]*clusterv1.StormBase // one snapshot per round
}

// runTerm does the duties until the term ends: once the caches they read
// are loaded, it starts them, runs a round whenever something they read
// changes, an action is reported or one of them asks for it, and stops
// them, in reverse order, when the term ends.
func (d *Duties) runTerm(term *leader.Term) {
	log := d.log.With("epoch", term.Epoch())
	if !d.awaitCaches(term) {
		return
	}
	duties := d.start(term, log)
	defer func() {
		for i := len(duties) - 1; i >= 0; i-- {
			duties[i].stop()
		}
	}()
	v := d.cfg.View
	for {
		// Taken before the round reads what they announce: no change goes
		// unseen.
		storms, dists, nimbuses := v.Storms.Changed(), v.Replicas.Changed(), v.Nimbuses.Changed()
		supervisors, assignments := v.Supervisors.Changed(), v.Assignments.Changed()

		r := roundState{now: time.Now(), storms: v.Storms.Snapshot()}
		var next time.Time
		for _, du := range duties {
			next = earliest(next, du.round(r))
		}

		var due <-chan time.Time
		if !next.IsZero() {
			due = time.After(time.Until(next))
		}
		select {
		case <-term.Done():
			return
		case <-storms:
		case <-dists:
		case <-nimbuses:
		case <-supervisors:
		case <-assignments:
		case <-d.cfg.Actions:
		case <-due:
		}
	}
}

// start starts the term's duties, in round order; each one's start is
// beside its round and its stop.
func (d *Duties) start(term *leader.Term, log *slog.Logger) []duty {
	sched := newScheduling(term, d.cfg, log)
	return []duty{
		newHeartbeats(d.cfg),
		newTimedActions(term, d.cfg, sched.sch.cleared, log),
		newCleanup(term, d.cfg, log),
		sched,
		newStandbys(d.cfg, log),
		newClusterVersion(term, d.cfg, log),
		newSnapshots(term, d.cfg, log),
	}
}

// awaitCaches waits until the caches the duties read are loaded:
// scheduling from an empty supervisor list would empty every assignment
// and stop every worker. It reports false if the term ended first.
func (d *Duties) awaitCaches(term *leader.Term) bool {
	v := d.cfg.View
	for _, loaded := range []<-chan struct{}{v.Storms.Loaded(), v.Supervisors.Loaded(), v.Assignments.Loaded()} {
		select {
		case <-loaded:
		case <-term.Done():
			return false
		}
	}
	return true
}

// earliest is the earlier of two times, zero standing for none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// heartbeats reads the supervisors' heartbeats at the term's start and
// every period after: the /supervisors cache watches membership only
// (view.New), and its Changed starts the round that reads them.
type heartbeats struct {
	supervisors interface{ Refresh() }
	every       time.Duration
	next        time.Time
}

func newHeartbeats(cfg Config) *heartbeats {
	return &heartbeats{supervisors: cfg.View.Supervisors,
		every: heartbeatReadEvery(cfg.Nimbus.SupervisorTimeout, cfg.Nimbus.SupervisorHeartbeat)}
}

func (h *heartbeats) round(r roundState) time.Time {
	if !r.now.Before(h.next) {
		h.supervisors.Refresh()
		h.next = r.now.Add(h.every)
	}
	return h.next
}

func (h *heartbeats) stop() {}

// heartbeatReadEvery is how often the leader reads the heartbeats of
// supervisors that beat every h and count as dead after t (> h, as
// validated). Reading every p, it sees a live one's stamp change at least
// every h+p, so p = (t-h)/2 leaves a live one (t-h)/2 short of the timeout,
// and a silent one is found within t+p, under 1.5 t. (Every t/2 would
// leave no margin once h reaches t/2.)
func heartbeatReadEvery(t, h time.Duration) time.Duration {
	return max((t-h)/2, 100*time.Millisecond)
}
