package stormapi

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/nimbusha/nimbus/apierr"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// topologyJSON is one topology of GET /topology/summary, and the head of
// GET /topology/:id. Resources are zeros (no resource-aware scheduler);
// a task is an executor.
type topologyJSON struct {
	ID                        string  `json:"id"`
	EncodedID                 string  `json:"encodedId"`
	Name                      string  `json:"name"`
	Owner                     string  `json:"owner"`
	Status                    string  `json:"status"`
	Uptime                    string  `json:"uptime"`
	UptimeSeconds             int64   `json:"uptimeSeconds"`
	TasksTotal                int32   `json:"tasksTotal"`
	WorkersTotal              int32   `json:"workersTotal"`
	ExecutorsTotal            int32   `json:"executorsTotal"`
	ReplicationCount          int32   `json:"replicationCount"`
	SchedulerInfo             *string `json:"schedulerInfo"`
	RequestedMemOnHeap        float64 `json:"requestedMemOnHeap"`
	RequestedMemOffHeap       float64 `json:"requestedMemOffHeap"`
	RequestedTotalMem         float64 `json:"requestedTotalMem"`
	RequestedCPU              float64 `json:"requestedCpu"`
	AssignedMemOnHeap         float64 `json:"assignedMemOnHeap"`
	AssignedMemOffHeap        float64 `json:"assignedMemOffHeap"`
	AssignedTotalMem          float64 `json:"assignedTotalMem"`
	AssignedCPU               float64 `json:"assignedCpu"`
	RequestedGenericResources string  `json:"requestedGenericResources"`
	AssignedGenericResources  string  `json:"assignedGenericResources"`
	TopologyVersion           string  `json:"topologyVersion"`
	StormVersion              string  `json:"stormVersion"`
	// Nimbus-HA's: the runtime truth of its workers.
	WorkersAssigned int32 `json:"workersAssigned"`
	WorkersRunning  int32 `json:"workersRunning"`
	WorkersFailing  int32 `json:"workersFailing"`
	MissingSlots    int32 `json:"missingSlots"`
	// Set when no nimbus and no supervisor holds its code (LOST), and
	// where a nimbus recovered its code from; null otherwise.
	LostReason    *string `json:"lostReason"`
	RecoveredFrom *string `json:"recoveredFrom"`
}

func topologyOf(t *nimbusv1.TopologySummary) topologyJSON {
	out := topologyJSON{
		ID: t.GetId(), EncodedID: url.PathEscape(t.GetId()), Name: t.GetName(), Owner: t.GetOwner(),
		Status: statusName(t.GetStatus()), Uptime: prettyUptime(t.GetUptimeSecs()), UptimeSeconds: t.GetUptimeSecs(),
		TasksTotal: t.GetNumExecutors(), WorkersTotal: t.GetNumWorkers(), ExecutorsTotal: t.GetNumExecutors(),
		ReplicationCount: t.GetReplicationCount(), StormVersion: StormVersion,
		WorkersAssigned: t.GetNumWorkersAssigned(), WorkersRunning: t.GetNumWorkersRunning(),
		WorkersFailing: t.GetNumWorkersFailing(), MissingSlots: t.GetMissingSlots(),
	}
	if n := t.GetMissingSlots(); n > 0 {
		info := fmt.Sprintf("%d of its workers have no slot: not enough free slots on live supervisors", n)
		out.SchedulerInfo = &info
	}
	if r := t.GetLostReason(); r != "" {
		info := "LOST, not scheduled: " + r
		out.LostReason, out.SchedulerInfo = &r, &info
	}
	if r := t.GetRecoveredFrom(); r != "" {
		out.RecoveredFrom = &r
	}
	return out
}

func (a *API) topologySummary(r *request) ([]byte, error) {
	s, err := a.snapshot(r)
	if err != nil {
		return nil, err
	}
	return s.body(r, "topologies", func() any {
		ts := s.info.GetCluster().GetTopologies()
		out := make([]topologyJSON, 0, len(ts))
		for _, t := range ts {
			out = append(out, topologyOf(t))
		}
		return struct {
			Topologies               []topologyJSON `json:"topologies"`
			SchedulerDisplayResource bool           `json:"schedulerDisplayResource"`
		}{Topologies: out}
	})
}

// topologyInfo is GetTopologyInfo of the topology the path's id names,
// its counts of streams and workers for all time.
func (a *API) topologyInfo(r *request) (*snapshot, *nimbusv1.GetTopologyInfoResponse, error) {
	return a.topologyInfoIn(r, "")
}

// topologyInfoIn is topologyInfo with the counts of streams and workers in
// the Storm window that covers window (statsWindowOf; "" for all time).
func (a *API) topologyInfoIn(r *request, window string) (*snapshot, *nimbusv1.GetTopologyInfoResponse, error) {
	s, err := a.snapshot(r)
	if err != nil {
		return nil, nil, err
	}
	id := r.PathValue("id")
	t, ok := s.byID[id]
	if !ok || t.GetName() == "" {
		return nil, nil, fmt.Errorf("%w: no topology has id %s", apierr.ErrNotFound, quoted(id))
	}
	info, err := a.cfg.Reads.GetTopologyInfo(r.ctx, &nimbusv1.GetTopologyInfoRequest{Name: t.GetName(), Window: statsWindowOf(window)})
	return s, info, err
}

// quoted quotes an id from a request for an error message, cut to 128
// bytes: the message must not echo whatever a caller sent.
func quoted(s string) string {
	if len(s) > 128 {
		return fmt.Sprintf("%q... (%d bytes)", s[:128], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// workerJSON is one worker of GET /topology/:id and /supervisor. Storm's
// resources are zeros; its uptime is its oldest executor's, when known.
type workerJSON struct {
	SupervisorID       string           `json:"supervisorId"`
	Host               string           `json:"host"`
	Port               int32            `json:"port"`
	TopologyID         string           `json:"topologyId"`
	TopologyName       string           `json:"topologyName"`
	ExecutorsTotal     int32            `json:"executorsTotal"`
	AssignedMemOnHeap  float64          `json:"assignedMemOnHeap"`
	AssignedMemOffHeap float64          `json:"assignedMemOffHeap"`
	AssignedCPU        float64          `json:"assignedCpu"`
	ComponentNumTasks  map[string]int32 `json:"componentNumTasks"`
	Uptime             string           `json:"uptime"`
	UptimeSeconds      int64            `json:"uptimeSeconds"`
	WorkerLogLink      string           `json:"workerLogLink"`
	Owner              string           `json:"owner"`
	// Nimbus-HA's: what its supervisor reports (the runtime truth).
	State          string `json:"state"`
	Restarts       int32  `json:"restarts"`
	LastError      string `json:"lastError"`
	LastErrorTime  int64  `json:"lastErrorTime"` // Unix seconds; 0 if none
	LastExitCode   *int32 `json:"lastExitCode"`
	LastExitSignal string `json:"lastExitSignal"`
}

// workerOf describes w of topology t (nil if unknown); execs are the
// executors it runs, if known.
func workerOf(w *nimbusv1.WorkerSummary, t *nimbusv1.TopologySummary, execs []*nimbusv1.ExecutorSummary) workerJSON {
	out := workerJSON{
		SupervisorID: w.GetSupervisorId(), Host: w.GetHost(), Port: w.GetPort(),
		TopologyID: w.GetTopologyId(), TopologyName: t.GetName(), Owner: t.GetOwner(),
		ExecutorsTotal: w.GetNumExecutors(), ComponentNumTasks: map[string]int32{}, WorkerLogLink: w.GetLogLink(),
		State: w.GetState(), Restarts: w.GetRestarts(), LastError: w.GetLastError(),
		LastErrorTime: w.GetLastErrorUnixMs() / 1000, LastExitCode: w.LastExitCode, LastExitSignal: w.GetLastExitSignal(),
	}
	for _, e := range execs {
		out.ComponentNumTasks[e.GetExecutor().GetComponentId()]++
		out.UptimeSeconds = max(out.UptimeSeconds, e.GetUptimeSecs())
	}
	out.Uptime = prettyUptime(out.UptimeSeconds)
	return out
}

// logLinks is each worker's log link (its supervisor's logviewer, Storm's
// workerLogLink) by host:port.
func logLinks(info *nimbusv1.GetTopologyInfoResponse) map[string]string {
	out := map[string]string{}
	for _, w := range info.GetWorkers() {
		out[addrOf(w.GetHost(), w.GetPort())] = w.GetLogLink()
	}
	return out
}

// executorsAt groups a topology's executors by the worker (host:port)
// that runs them.
func executorsAt(info *nimbusv1.GetTopologyInfoResponse) map[string][]*nimbusv1.ExecutorSummary {
	out := map[string][]*nimbusv1.ExecutorSummary{}
	for _, e := range info.GetExecutors() {
		k := addrOf(e.GetHost(), e.GetPort())
		out[k] = append(out[k], e)
	}
	return out
}

// components lists a topology's components, sorted, without system
// components (ids starting "__") unless sys.
func components(info *nimbusv1.GetTopologyInfoResponse, sys bool) []string {
	var out []string
	for c := range info.GetComponentParallelism() {
		if sys || !strings.HasPrefix(c, "__") {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// isSpout is whether component c was submitted as a spout.
func isSpout(info *nimbusv1.GetTopologyInfoResponse, c string) bool {
	_, ok := slices.BinarySearch(info.GetSpoutIds(), c)
	return ok
}
