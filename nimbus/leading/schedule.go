package leading

import (
	"cmp"
	"errors"
	"log/slog"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	"github.com/nimbusha/nimbus/nimbus/view"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// scheduling places the topologies' executors on live slots, every round
// (the scheduler decides), writes what changed, and exports what could
// not be placed until its term ends.
type scheduling struct {
	term    *leader.Term
	ops     cluster.Ops   // the assignment writes
	view    *view.View    // /storms, /assignments, /lost, /supervisors
	timeout time.Duration // nimbus.supervisor.timeout.secs
	monitor time.Duration // nimbus.monitor.freq.secs: rounds at least this often, to find silent supervisors
	budget  int           // what one node may hold (validate.ZKNodeBudget)
	metrics *Metrics
	log     *slog.Logger
	sch     *scheduler
	// scheduledOnce is set after the term's first round, which logs its
	// latency from lock to schedule: the cost of a failover at scale.
	scheduledOnce bool
}

func newScheduling(term *leader.Term, cfg Config, log *slog.Logger) *scheduling {
	return &scheduling{term: term, ops: cfg.Session.Ops(), view: cfg.View, timeout: cfg.Nimbus.SupervisorTimeout,
		monitor: cfg.Nimbus.MonitorFreq, budget: validate.ZKNodeBudget(cfg.Nimbus.ZKMaxBuffer), metrics: cfg.Metrics,
		log: log, sch: newScheduler()}
}

// round schedules and logs what it wrote.
func (s *scheduling) round(r roundState) time.Time {
	began := time.Now()
	n, err := s.schedule(began) // now, not the round's start: the duties before may have taken a while
	s.metrics.scheduleSeconds.Observe(time.Since(began).Seconds())
	switch {
	case err != nil:
		s.log.Warn("scheduling failed; will retry", "err", err)
	case !s.scheduledOnce:
		s.log.Info("term's first schedule done", "elapsed_ms", time.Since(s.term.Began()).Milliseconds(),
			"topologies", len(r.storms), "supervisors", len(s.view.Supervisors.Snapshot()), "assignments_written", n)
		s.scheduledOnce = true
	case n > 0:
		s.log.Info("assignments written", "topologies", n, "elapsed_ms", time.Since(began).Milliseconds())
	}
	return r.now.Add(s.monitor) // heartbeats going stale wake nothing else
}

// stop takes back what the leader exports about placement.
func (s *scheduling) stop() {
	s.metrics.unplacedSlots.Set(0)
	s.metrics.unplacedTopologies.Set(0)
}

// scheduler is one term's scheduling state: the Placer (package assign),
// which holds every topology, live supervisor and assignment it was told
// and decides as Schedule does, and what it was told (observe.go), so that
// a round tells it only what changed since the last: a round after one
// submission costs that topology, not the cluster.
type scheduler struct {
	placer *assign.Placer
	told   map[string]toldTopology // what the placer was last given, by topology
	// gens are the cache states the last round looked at; recheck, the
	// topologies to look at next round whatever the caches say.
	gens    struct{ storms, assignments, lost, supervisors uint64 }
	recheck map[string]bool

	// Supervisors as last read (pointers into the cache), their hosts, and
	// liveness by this leader's own clock: seen is when it last saw each
	// one's heartbeat change, silent when each would go silent.
	sups   map[string]*clusterv1.SupervisorInfo
	hosts  map[string]string
	seen   map[string]heartbeatSeen
	live   map[string]bool
	silent silenceHeap

	// written is what this term last wrote per topology: the cache may lag
	// it, and scheduling from a stale assignment would move workers twice.
	written map[string]*clusterv1.Assignment
	deleted map[string]bool
	// oversize are the topologies whose assignment did not fit in a
	// ZooKeeper node, logged once each: never sent, since ZooKeeper drops
	// the connection of whoever sends one, and with it the leader's term.
	oversize map[string]bool
	// short are the topologies lacking slots and how many each lacks, and
	// their sum (noteShortfall).
	short      map[string]int32
	shortTotal int32
}

// cleared records that this term deleted a topology's assignment (a
// rebalance): until the cache shows it gone, the cached one is stale.
func (sch *scheduler) cleared(id string) {
	delete(sch.written, id)
	sch.deleted[id] = true
	sch.recheck[id] = true
}

type heartbeatSeen struct {
	beat int64 // the supervisor's own heartbeat stamp, as a change counter
	at   time.Time
}

func newScheduler() *scheduler {
	return &scheduler{placer: assign.NewPlacer(), told: map[string]toldTopology{}, recheck: map[string]bool{},
		sups: map[string]*clusterv1.SupervisorInfo{}, hosts: map[string]string{}, seen: map[string]heartbeatSeen{}, live: map[string]bool{},
		written: map[string]*clusterv1.Assignment{}, deleted: map[string]bool{}, oversize: map[string]bool{}, short: map[string]int32{}}
}

// schedule assigns the topologies' executors to the live supervisors'
// slots and writes, fenced, every assignment that changed, and every one
// whose node holds garbage: it tells the term's Placer what changed since
// the last round, lets it decide, and writes what it decided anew. Killed
// and rebalancing topologies keep their assignment (and slots) until their
// wait ends; so does a topology whose StormBase is unreadable, or that is
// LOST. It returns how many assignments it wrote.
func (s *scheduling) schedule(now time.Time) (int, error) {
	sch, v := s.sch, s.view
	sch.observeSupervisors(v.Supervisors, now, s.timeout)
	sch.observeTopologies(v.Storms, v.Assignments, v.Lost)
	decided := sch.placer.Place()
	sch.noteShortfall(decided, s.metrics, s.log)

	var writes []assignmentWrite
	for _, id := range decided {
		told, ok := sch.told[id]
		a := sch.placer.Result(id)
		if ok && frozen(told.base) {
			// Never written, but what it was placed at stays taken until
			// it thaws (and is told again): not decided anew every round.
			sch.placer.Adopt(id)
			continue
		}
		if !ok || (told.current != nil && !told.garbage && equalAssignment(a, fromProto(told.current))) {
			continue // written already
		}
		if told.garbage {
			s.log.Warn("rewriting an unreadable assignment", "topology", id)
		}
		w := s.assignmentWrite(id, a, told.current, told.current != nil || told.garbage, told.base, sch.hosts, now)
		if !sch.fits(w, s.budget, s.log) {
			continue
		}
		writes = append(writes, w)
	}
	return sch.wrote(writes, writeAll(s.term, writes))
}

// frozen reports whether a topology's assignment must not be written: its
// StormBase is unreadable or LOST (nil), or it is killed or rebalancing.
// Its slots stay taken all the same.
func frozen(base *clusterv1.StormBase) bool {
	switch base.GetStatus() {
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED, clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
		return true
	}
	return base == nil
}

// fits reports whether w's assignment fits in a ZooKeeper node of budget
// bytes, and logs, once per topology until it fits again, the one that
// does not. Submit and rebalance refuse a topology that could outgrow the
// budget; this is the last line, for one that grew past it anyway (a
// supervisor registered with a longer id than any before).
func (sch *scheduler) fits(w assignmentWrite, budget int, log *slog.Logger) bool {
	if size := proto.Size(w.out); size > budget {
		if !sch.oversize[w.id] {
			log.Error("assignment larger than a ZooKeeper node may be; not written (the topology keeps its workers)",
				"topology", w.id, "bytes", size, "budget", budget, "key", configs.KeyZKMaxBuffer)
			sch.oversize[w.id] = true
		}
		return false
	}
	delete(sch.oversize, w.id)
	return true
}

// wrote has the Placer adopt the writes that succeeded, and remembers them
// until the cache shows them; it returns how many did and the first
// failure that matters. A write that failed is not adopted: the next round
// decides it again from the current the Placer was told.
func (sch *scheduler) wrote(writes []assignmentWrite, errs []error) (int, error) {
	written := 0
	var failed error
	for i, err := range errs {
		w := writes[i]
		switch {
		case errors.Is(err, cluster.ErrNodeExists) || errors.Is(err, cluster.ErrNoNode):
			// The cache lagged (the assignment, or the StormBase is
			// gone); the next round sees the nodes as they are.
		case err != nil:
			failed = cmp.Or(failed, err)
		default:
			sch.placer.Adopt(w.id)
			sch.written[w.id] = w.out
			delete(sch.deleted, w.id)
			if told, ok := sch.told[w.id]; ok {
				told.current, told.garbage = w.out, false
				sch.told[w.id] = told
			}
			written++
		}
	}
	return written, failed
}

// maxWritesInFlight bounds the assignment writes a round has outstanding.
// Each is its own fenced multi; go-zookeeper pipelines them on its one
// connection, so a round that places a thousand topologies takes a few
// round trips, not a thousand.
const maxWritesInFlight = 32

// assignmentWrite is one topology's new assignment and the operations that
// write it.
type assignmentWrite struct {
	id  string
	out *clusterv1.Assignment
	ops []cluster.Op
}

// writeAll applies each write in a fenced multi of its own, concurrently,
// and returns their errors in order.
func writeAll(term *leader.Term, writes []assignmentWrite) []error {
	errs := make([]error, len(writes))
	var g errgroup.Group
	g.SetLimit(maxWritesInFlight)
	for i, w := range writes {
		g.Go(func() error {
			_, errs[i] = term.Multi(w.ops...)
			return nil
		})
	}
	_ = g.Wait() // every error is in errs
	return errs
}

// frozenTopology is the topology an assignment describes, for a topology
// whose StormBase cannot be read: scheduled only so that its slots stay
// taken.
func frozenTopology(id string, a assign.Assignment) assign.Topology {
	t := assign.Topology{ID: id}
	slots := map[assign.Slot]bool{}
	for e, slot := range a {
		t.Executors = append(t.Executors, e)
		slots[slot] = true
	}
	sort.Slice(t.Executors, func(i, j int) bool { return t.Executors[i].TaskStart < t.Executors[j].TaskStart })
	t.NumWorkers = len(slots)
	return t
}

func fromProto(a *clusterv1.Assignment) assign.Assignment {
	out := make(assign.Assignment, len(a.GetExecutors()))
	for _, ea := range a.GetExecutors() {
		e := ea.GetExecutor()
		out[assign.Executor{Component: e.GetComponentId(), TaskStart: e.GetTaskStart(), TaskEnd: e.GetTaskEnd()}] =
			assign.Slot{SupervisorID: ea.GetSlot().GetSupervisorId(), Port: ea.GetSlot().GetPort()}
	}
	return out
}

func equalAssignment(a, b assign.Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for e, slot := range a {
		if b[e] != slot {
			return false
		}
	}
	return true
}

// assignmentWrite builds a topology's new assignment and the write of it,
// over the node if it exists. Executors that stay in their slot keep their
// start time. The write fails (NoNode) unless the topology's StormBase
// still exists: the caches lag each other, and a topology forgotten from
// another nimbus can look, for a round, unmarked but still there; its
// assignment must not outlive it.
func (s *scheduling) assignmentWrite(id string, a assign.Assignment, old *clusterv1.Assignment, exists bool,
	base *clusterv1.StormBase, hosts map[string]string, now time.Time) assignmentWrite {
	started := map[assign.Executor]int64{}
	prev := map[assign.Executor]assign.Slot{}
	for _, ea := range old.GetExecutors() {
		e := ea.GetExecutor()
		k := assign.Executor{Component: e.GetComponentId(), TaskStart: e.GetTaskStart(), TaskEnd: e.GetTaskEnd()}
		started[k] = ea.GetStartTimeUnixSecs()
		prev[k] = assign.Slot{SupervisorID: ea.GetSlot().GetSupervisorId(), Port: ea.GetSlot().GetPort()}
	}
	out := &clusterv1.Assignment{SupervisorHosts: map[string]string{}, CodeMetaDigest: base.GetCodeMetaDigest(), Epoch: s.term.Epoch()}
	keys := make([]assign.Executor, 0, len(a))
	for e := range a {
		keys = append(keys, e)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Component != keys[j].Component {
			return keys[i].Component < keys[j].Component
		}
		return keys[i].TaskStart < keys[j].TaskStart
	})
	for _, e := range keys {
		slot := a[e]
		start := now.Unix()
		if p, ok := prev[e]; ok && p == slot {
			start = started[e]
		}
		out.Executors = append(out.Executors, &clusterv1.ExecutorAssignment{
			Executor:          &clusterv1.Executor{ComponentId: e.Component, TaskStart: e.TaskStart, TaskEnd: e.TaskEnd},
			Slot:              &clusterv1.Slot{SupervisorId: slot.SupervisorID, Port: slot.Port},
			StartTimeUnixSecs: start,
		})
		out.SupervisorHosts[slot.SupervisorID] = hosts[slot.SupervisorID]
	}
	// Fields a newer release wrote, which this one does not know, stay
	// (docs/ARCHITECTURE.md section 18).
	out.ProtoReflect().SetUnknown(old.ProtoReflect().GetUnknown())
	write := s.ops.SetAssignment(id, out)
	if !exists {
		write = s.ops.CreateAssignment(id, out)
	}
	return assignmentWrite{id: id, out: out, ops: []cluster.Op{s.ops.CheckStorm(id, cluster.AnyVersion), write}}
}
