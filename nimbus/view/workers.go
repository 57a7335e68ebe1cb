package view

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// Worker truth (docs/ARCHITECTURE.md section 11): the read path joins the
// assignments, which say where a topology's workers should run, with the
// supervisors' heartbeats, which say what runs there, by supervisor id and
// port (a slot), and by topology id (the worker in a slot is the
// topology's only if its supervisor says so).

// States the nimbus gives a slot its supervisor does not report on.
const (
	// workerPending: the supervisor is registered but reports no worker of
	// this topology on the port (it is still fetching the code, or the
	// heartbeat that says otherwise was not read yet).
	workerPending = "pending"
	// workerLost: the slot's supervisor is not registered.
	workerLost = "lost"
)

// workerIndex is every reported worker, by supervisor id and port.
type workerIndex map[string]map[int32]*clusterv1.WorkerState

func indexWorkers(sups map[string]*clusterv1.SupervisorInfo) workerIndex {
	idx := make(workerIndex, len(sups))
	for id, info := range sups {
		if len(info.GetWorkers()) == 0 {
			continue
		}
		ports := make(map[int32]*clusterv1.WorkerState, len(info.GetWorkers()))
		for _, w := range info.GetWorkers() {
			ports[w.GetPort()] = w
		}
		idx[id] = ports
	}
	return idx
}

// supervisorsOf is the supervisors a's slots are on, of sups: indexing
// only them keeps a GetTopologyInfo's cost to its own topology's size.
func supervisorsOf(a *clusterv1.Assignment, sups map[string]*clusterv1.SupervisorInfo) map[string]*clusterv1.SupervisorInfo {
	out := map[string]*clusterv1.SupervisorInfo{}
	for _, ea := range a.GetExecutors() {
		id := ea.GetSlot().GetSupervisorId()
		if info, ok := sups[id]; ok {
			out[id] = info
		}
	}
	return out
}

// workerSummary describes w, which its supervisor sup (id, host) reports;
// the log tail only if tails.
func workerSummary(supID, host string, w *clusterv1.WorkerState, tails bool) *nimbusv1.WorkerSummary {
	s := &nimbusv1.WorkerSummary{
		TopologyId: w.GetTopologyId(), SupervisorId: supID, Host: host, Port: w.GetPort(),
		State: w.GetState(), Restarts: w.GetRestarts(), LastExitCode: w.LastExitCode, LastExitSignal: w.GetLastExitSignal(),
		LastError: w.GetLastError(), LastErrorUnixMs: w.GetLastErrorUnixMs(), Pid: w.GetPid(),
	}
	if tails {
		s.LogTail = w.GetLogTail()
	}
	return s
}

// assignedWorkers is one row per slot topology id's assignment uses, in
// supervisor id and port order, each with what its supervisor reports.
// Its cost is linear in the assignment's executors.
func assignedWorkers(id string, a *clusterv1.Assignment, sups map[string]*clusterv1.SupervisorInfo, idx workerIndex, tails bool) []*nimbusv1.WorkerSummary {
	type slot struct {
		sup  string
		port int32
	}
	execs := map[slot]int32{}
	for _, ea := range a.GetExecutors() {
		execs[slot{ea.GetSlot().GetSupervisorId(), ea.GetSlot().GetPort()}]++
	}
	out := make([]*nimbusv1.WorkerSummary, 0, len(execs))
	for s, n := range execs {
		host := a.GetSupervisorHosts()[s.sup]
		var w *nimbusv1.WorkerSummary
		if ws := idx[s.sup][s.port]; ws != nil && ws.GetTopologyId() == id {
			w = workerSummary(s.sup, host, ws, tails)
		} else {
			state := workerPending
			if _, registered := sups[s.sup]; !registered {
				state = workerLost
			}
			w = &nimbusv1.WorkerSummary{TopologyId: id, SupervisorId: s.sup, Host: host, Port: s.port, State: state}
		}
		w.NumExecutors = n
		w.LogLink = LogLink(sups[s.sup].GetLogviewerUrl(), id, s.port)
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *nimbusv1.WorkerSummary) int {
		return cmp.Or(cmp.Compare(a.GetSupervisorId(), b.GetSupervisorId()), cmp.Compare(a.GetPort(), b.GetPort()))
	})
	return out
}

// countWorkers fills t's worker counts from its assigned workers and base,
// its StormBase.
func countWorkers(t *nimbusv1.TopologySummary, base *clusterv1.StormBase, workers []*nimbusv1.WorkerSummary) {
	t.NumWorkersAssigned = int32(len(workers))
	for _, w := range workers {
		switch w.GetState() {
		case "running":
			t.NumWorkersRunning++
		case "backoff":
			t.NumWorkersFailing++
		}
	}
	t.MissingSlots = MissingSlots(base, t.NumWorkersAssigned)
}

// MissingSlots is how many of the workers a topology should have its
// assignment lacks a slot for: min(num_workers, executors) less the slots
// it uses. A topology placed short grows when slots free up (the
// scheduler's rule 3b); killed and rebalancing topologies are not placed
// and lack nothing.
func MissingSlots(base *clusterv1.StormBase, assigned int32) int32 {
	switch base.GetStatus() {
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:
	default:
		return 0
	}
	var execs int32
	for _, n := range base.GetComponentExecutors() {
		execs += max(n, 0)
	}
	want := min(max(base.GetNumWorkers(), 1), execs)
	return max(want-assigned, 0)
}

// supervisorWorkers lists what a supervisor reports running or trying to,
// by port, without log tails.
func supervisorWorkers(id string, info *clusterv1.SupervisorInfo) []*nimbusv1.WorkerSummary {
	out := make([]*nimbusv1.WorkerSummary, 0, len(info.GetWorkers()))
	for _, w := range info.GetWorkers() {
		s := workerSummary(id, info.GetHost(), w, false)
		s.LogLink = LogLink(info.GetLogviewerUrl(), w.GetTopologyId(), w.GetPort())
		out = append(out, s)
	}
	return out
}

// LogLink is where the worker of topology on port reads its log on the
// logviewer at base (its supervisor's logviewer_url; docs/ARCHITECTURE.md
// section 23): Storm's workerLogLink, empty when the supervisor serves
// no logs or registered something that is not an http(s) URL with a host
// (a javascript: URL must not become a link).
func LogLink(base, topology string, port int32) string {
	u, err := validate.LinkURL("logviewer_url", base)
	if err != nil {
		return ""
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/log"
	u.RawPath = ""
	u.RawQuery = url.Values{"file": {fmt.Sprintf("%s/%d/worker.log", topology, port)}}.Encode()
	return u.String()
}

// logviewerURL is a supervisor's logviewer_url if it is one to link to
// (LogLink's rule), else empty.
func logviewerURL(info *clusterv1.SupervisorInfo) string {
	if _, err := validate.LinkURL("logviewer_url", info.GetLogviewerUrl()); err != nil {
		return ""
	}
	return info.GetLogviewerUrl()
}

// heartbeatReads has the view read supervisors' heartbeats when a read
// asks for them, at most once per heartbeat period: the /supervisors cache
// watches membership only (New), and only the leader reads payloads
// on its own schedule. An idle nimbus reads nothing; one answering reads
// reads each supervisor's node at most once per period, however many
// requests it answers. The answer that asks comes from the cache as it is:
// it may be a period behind.
type heartbeatReads struct {
	every time.Duration
	last  atomic.Int64 // Unix nanoseconds of the last refresh asked
}

// due reports whether a refresh is due at now, and if so records it. A
// tenth of the period is slack: a ticker at the period is not skipped for
// firing a moment early.
func (h *heartbeatReads) due(now time.Time) bool {
	if h == nil || h.every <= 0 {
		return false
	}
	last := h.last.Load()
	if now.UnixNano()-last < int64(h.every)*9/10 {
		return false
	}
	return h.last.CompareAndSwap(last, now.UnixNano())
}
