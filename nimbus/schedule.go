package nimbus

import (
	"errors"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// schedule assigns the topologies' executors to the live supervisors'
// slots (package assign decides) and writes, fenced, every assignment that
// changed. Killed and rebalancing topologies keep their assignment until
// their wait ends. It returns how many assignments it wrote.
func (s *Server) schedule(term *leader.Term) (int, error) {
	now := time.Now()
	storms := s.view.storms.Snapshot()
	current := s.view.assignments.Snapshot()

	var sups []assign.Supervisor
	hosts := map[string]string{}
	for id, info := range s.view.supervisors.Snapshot() {
		if info == nil || !s.alive(info, now) {
			continue
		}
		sups = append(sups, assign.Supervisor{ID: id, Ports: info.GetSlotPorts()})
		hosts[id] = info.GetHost()
	}
	var tops []assign.Topology
	cur := map[string]assign.Assignment{}
	for id, base := range storms {
		if base == nil {
			continue
		}
		switch base.GetStatus() {
		case clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED, clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
			continue
		}
		tops = append(tops, assign.Topology{
			ID: id, NumWorkers: int(base.GetNumWorkers()), Executors: assign.Executors(base.GetComponentExecutors()),
		})
		if a := current[id]; a != nil {
			cur[id] = fromProto(a)
		}
	}
	sort.Slice(tops, func(i, j int) bool { return tops[i].ID < tops[j].ID })
	next := assign.Schedule(tops, sups, cur)

	written := 0
	for _, t := range tops {
		a := next[t.ID]
		if equalAssignment(a, cur[t.ID]) && current[t.ID] != nil {
			continue
		}
		if err := s.writeAssignment(term, t.ID, a, current[t.ID], storms[t.ID], hosts, now); err != nil {
			return written, err
		}
		written++
	}
	return written, nil
}

// alive: registered (the cache only holds live ephemeral nodes) and
// heartbeating within nimbus.supervisor.timeout.secs.
func (s *Server) alive(info *clusterv1.SupervisorInfo, now time.Time) bool {
	return now.Sub(time.UnixMilli(info.GetLastHeartbeatUnixMs())) <= s.cfg.SupervisorTimeout
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

// writeAssignment writes a topology's new assignment in a fenced write.
// Executors that stay in their slot keep their start time.
func (s *Server) writeAssignment(term *leader.Term, id string, a assign.Assignment, old *clusterv1.Assignment,
	base *clusterv1.StormBase, hosts map[string]string, now time.Time) error {
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
	path := s.sess.Paths().Assignment(id)
	data := cluster.Encode(out)
	var op any = &zk.SetDataRequest{Path: path, Data: data, Version: -1}
	if old == nil {
		op = &zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll)}
	}
	_, err := term.Multi(op)
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
		// The cache lagged; the next round sees the node as it is.
		return nil
	}
	return err
}
