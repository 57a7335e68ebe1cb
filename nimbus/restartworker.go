package nimbus

import (
	"context"
	"fmt"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// errNoSuchWorker: the topology's assignment places no worker at the
// host:port asked for.
var errNoSuchWorker = apierr.Sentinel("nimbus: no such worker", apierr.ErrNotFound)

// RestartWorker asks the supervisor of one of a topology's workers to
// restart it on its slot: the slot's generation in the StormBase goes up
// (topology.RestartWorker), and the supervisor, which watches /storms,
// stops the worker and starts it again at once, counting a restart whose
// reason names who asked.
func (s *service) RestartWorker(ctx context.Context, req *nimbusv1.RestartWorkerRequest) (*nimbusv1.RestartWorkerResponse, error) {
	if err := validate.RestartWorker(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	host, port, _ := validate.HostPort("worker", req.GetWorker())
	resp := &nimbusv1.RestartWorkerResponse{Port: port}
	err := s.transitionOf(ctx, req.GetName(), auth.ActionRestartWorker, func(id string, _ storedSpec) topology.Change {
		a := s.view.Assignments.Snapshot()[id]
		resp.SupervisorId = slotAt(a, host, port)
		placed := placedSlots(a)
		edit := topology.RestartWorker(cluster.SlotKey(resp.SupervisorId, port), auth.Who(ctx), placed, time.Now)
		return func(base *clusterv1.StormBase) (bool, error) {
			if resp.SupervisorId == "" {
				return false, fmt.Errorf("%w: %s has no worker at %s", errNoSuchWorker, req.GetName(), req.GetWorker())
			}
			changed, err := edit(base)
			resp.Generation = base.GetWorkerRestarts()[cluster.SlotKey(resp.SupervisorId, port)].GetGeneration()
			return changed, err
		}
	})
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	s.log.Info("worker restart asked", "topology", req.GetName(), "worker", req.GetWorker(),
		"supervisor", resp.SupervisorId, "generation", resp.Generation, "by", auth.Who(ctx))
	return resp, nil
}

// slotAt is the id of the supervisor whose slot host:port the assignment
// uses, or "". The host is matched as the assignment names it.
func slotAt(a *clusterv1.Assignment, host string, port int32) string {
	for _, ea := range a.GetExecutors() {
		slot := ea.GetSlot()
		if slot.GetPort() == port && a.GetSupervisorHosts()[slot.GetSupervisorId()] == host {
			return slot.GetSupervisorId()
		}
	}
	return ""
}

// placedSlots are the slots the assignment uses, as cluster.SlotKey names
// them.
func placedSlots(a *clusterv1.Assignment) []string {
	seen := map[string]bool{}
	var out []string
	for _, ea := range a.GetExecutors() {
		k := cluster.SlotKey(ea.GetSlot().GetSupervisorId(), ea.GetSlot().GetPort())
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
