package nimbus

import (
	"cmp"
	"errors"
	"log/slog"
	"maps"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// scheduler is one term's scheduling state.
type scheduler struct {
	// seen is when this leader last saw each supervisor's heartbeat change,
	// by its own clock: liveness never compares clocks across machines.
	seen map[string]heartbeatSeen
	// written is what this term last wrote per topology: the cache may lag
	// it, and scheduling from a stale assignment would move workers twice.
	written map[string]*clusterv1.Assignment
	deleted map[string]bool
	// oversize are the topologies whose assignment did not fit in a
	// ZooKeeper node, logged once each: never sent, since ZooKeeper drops
	// the connection of whoever sends one, and with it the leader's term.
	oversize map[string]bool
	// short are the topologies this term logged as lacking slots, until
	// they lack none (noteShortfall).
	short map[string]bool
}

// cleared records that this term deleted a topology's assignment (a
// rebalance): until the cache shows it gone, the cached one is stale.
func (sch *scheduler) cleared(id string) {
	delete(sch.written, id)
	sch.deleted[id] = true
}

type heartbeatSeen struct {
	beat int64 // the supervisor's own heartbeat stamp, as a change counter
	at   time.Time
}

func newScheduler() *scheduler {
	return &scheduler{seen: map[string]heartbeatSeen{}, written: map[string]*clusterv1.Assignment{}, deleted: map[string]bool{},
		oversize: map[string]bool{}, short: map[string]bool{}}
}

// schedule assigns the topologies' executors to the live supervisors'
// slots (package assign decides) and writes, fenced, every assignment that
// changed, and every one whose node holds garbage. Killed and rebalancing
// topologies keep their assignment (and slots) until their wait ends; so
// does a topology whose StormBase is unreadable, or that is LOST. It
// returns how many assignments it wrote.
func (s *Server) schedule(term *leader.Term, sch *scheduler) (int, error) {
	now := time.Now()
	storms := withoutLost(s.view.storms.Snapshot(), s.view.lost.Snapshot())
	current := sch.current(storms, s.view.assignments.Snapshot())
	unreadable := s.view.assignments.Unreadable()
	sups, hosts := sch.liveSupervisors(s.view.supervisors.Snapshot(), now, s.cfg.SupervisorTimeout)
	tops, frozen, cur := topologies(storms, current)
	next := assign.Schedule(tops, sups, cur)
	sch.noteShortfall(shortfallOf(storms, next, sups), storms, s.metrics, s.log)

	var writes []assignmentWrite
	for _, t := range tops {
		a := next[t.ID]
		if frozen[t.ID] || (equalAssignment(a, cur[t.ID]) && current[t.ID] != nil && !unreadable[t.ID]) {
			continue
		}
		if unreadable[t.ID] {
			s.log.Warn("rewriting an unreadable assignment", "topology", t.ID, "epoch", term.Epoch())
		}
		exists := current[t.ID] != nil || unreadable[t.ID]
		w := s.assignmentWrite(term, t.ID, a, current[t.ID], exists, storms[t.ID], hosts, now)
		if !sch.fits(w, validate.ZKNodeBudget(s.cfg.ZKMaxBuffer), s.log) {
			continue
		}
		writes = append(writes, w)
	}
	return sch.wrote(writes, writeAll(term, writes))
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

// current is the cached assignments, corrected by what this term wrote or
// deleted and the cache does not show yet. The cache's map is copied, not
// changed.
func (sch *scheduler) current(storms map[string]*clusterv1.StormBase, cached map[string]*clusterv1.Assignment) map[string]*clusterv1.Assignment {
	current := maps.Clone(cached)
	for id, a := range sch.written {
		switch c := current[id]; {
		case storms[id] == nil, c != nil && proto.Equal(c, a):
			delete(sch.written, id) // gone, or the cache caught up
		default:
			current[id] = a
		}
	}
	for id := range sch.deleted {
		if current[id] == nil || storms[id] == nil {
			delete(sch.deleted, id) // the cache caught up
		} else {
			delete(current, id)
		}
	}
	return current
}

// liveSupervisors returns the registered supervisors whose heartbeat this
// leader saw change within timeout, by its own clock, and every one's
// host by id.
func (sch *scheduler) liveSupervisors(registered map[string]*clusterv1.SupervisorInfo, now time.Time, timeout time.Duration) ([]assign.Supervisor, map[string]string) {
	for id := range sch.seen {
		if _, ok := registered[id]; !ok {
			delete(sch.seen, id)
		}
	}
	var live []assign.Supervisor
	hosts := map[string]string{}
	for id, info := range registered {
		if info == nil {
			continue
		}
		if prev, ok := sch.seen[id]; !ok || prev.beat != info.GetLastHeartbeatUnixMs() {
			sch.seen[id] = heartbeatSeen{beat: info.GetLastHeartbeatUnixMs(), at: now}
		}
		if now.Sub(sch.seen[id].at) > timeout {
			continue // registered but silent: hung
		}
		live = append(live, assign.Supervisor{ID: id, Ports: info.GetSlotPorts()})
		hosts[id] = info.GetHost()
	}
	return live, hosts
}

// withoutLost is storms with the LOST topologies' StormBases left out
// (nil), as if unreadable: the leader has no code to schedule them with,
// so they keep their assignment and slots as they are. The cache's map is
// copied only if one is LOST.
func withoutLost(storms map[string]*clusterv1.StormBase, marks map[string]*clusterv1.LostMark) map[string]*clusterv1.StormBase {
	lost := codesync.LostMarks(storms, marks)
	if len(lost) == 0 {
		return storms
	}
	out := maps.Clone(storms)
	for id := range lost {
		out[id] = nil
	}
	return out
}

// topologies returns what the scheduler places, sorted by id, which of
// them it must not move (frozen), and their current assignments.
func topologies(storms map[string]*clusterv1.StormBase, current map[string]*clusterv1.Assignment) ([]assign.Topology, map[string]bool, map[string]assign.Assignment) {
	var tops []assign.Topology
	frozen := map[string]bool{}
	cur := map[string]assign.Assignment{}
	for id, base := range storms {
		if base == nil {
			// Never readable (the cache logged it): nothing to schedule,
			// but the topology it may be keeps its workers and slots.
			if a := current[id]; a != nil {
				frozen[id], cur[id] = true, fromProto(a)
				tops = append(tops, frozenTopology(id, cur[id]))
			}
			continue
		}
		switch base.GetStatus() {
		case clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED, clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
			// Scheduled only so that their slots stay taken; never written.
			frozen[id] = true
		}
		tops = append(tops, assign.Topology{
			ID: id, NumWorkers: int(base.GetNumWorkers()), Executors: assign.Executors(base.GetComponentExecutors()),
		})
		if a := current[id]; a != nil {
			cur[id] = fromProto(a)
		}
	}
	sort.Slice(tops, func(i, j int) bool { return tops[i].ID < tops[j].ID })
	return tops, frozen, cur
}

// wrote remembers the writes that succeeded, until the cache shows them,
// and returns how many did and the first failure that matters.
func (sch *scheduler) wrote(writes []assignmentWrite, errs []error) (int, error) {
	written := 0
	var failed error
	for i, err := range errs {
		switch {
		case errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode):
			// The cache lagged; the next round sees the node as it is.
		case err != nil:
			failed = cmp.Or(failed, err)
		default:
			sch.written[writes[i].id] = writes[i].out
			delete(sch.deleted, writes[i].id)
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

// assignmentWrite is one topology's new assignment and the operation that
// writes it.
type assignmentWrite struct {
	id  string
	out *clusterv1.Assignment
	op  cluster.Op
}

// writeAll applies each write in a fenced multi of its own, concurrently,
// and returns their errors in order.
func writeAll(term *leader.Term, writes []assignmentWrite) []error {
	errs := make([]error, len(writes))
	var g errgroup.Group
	g.SetLimit(maxWritesInFlight)
	for i, w := range writes {
		g.Go(func() error {
			_, errs[i] = term.Multi(w.op)
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
// start time.
func (s *Server) assignmentWrite(term *leader.Term, id string, a assign.Assignment, old *clusterv1.Assignment, exists bool,
	base *clusterv1.StormBase, hosts map[string]string, now time.Time) assignmentWrite {
	started := map[assign.Executor]int64{}
	prev := map[assign.Executor]assign.Slot{}
	for _, ea := range old.GetExecutors() {
		e := ea.GetExecutor()
		k := assign.Executor{Component: e.GetComponentId(), TaskStart: e.GetTaskStart(), TaskEnd: e.GetTaskEnd()}
		started[k] = ea.GetStartTimeUnixSecs()
		prev[k] = assign.Slot{SupervisorID: ea.GetSlot().GetSupervisorId(), Port: ea.GetSlot().GetPort()}
	}
	out := &clusterv1.Assignment{SupervisorHosts: map[string]string{}, CodeMetaDigest: base.GetCodeMetaDigest(), Epoch: term.Epoch()}
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
	op := s.sess.Ops().SetAssignment(id, out)
	if !exists {
		op = s.sess.Ops().CreateAssignment(id, out)
	}
	return assignmentWrite{id: id, out: out, op: op}
}
