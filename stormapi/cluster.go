package stormapi

import (
	"encoding/json"
	"net"
	"strconv"

	"github.com/nimbusha/nimbus/auth"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// clusterSummaryJSON is GET /cluster/summary. Resources (memory, CPU)
// are Storm's resource-aware scheduler's, which Nimbus-HA does not have:
// zeros, with Storm's types.
type clusterSummaryJSON struct {
	StormVersion     string `json:"stormVersion"`
	StormVersionInfo struct {
		Version     string `json:"version"`
		Revision    string `json:"revision"` // Nimbus-HA's version
		Branch      string `json:"branch"`
		Date        string `json:"date"`
		SrcChecksum string `json:"srcChecksum"`
	} `json:"stormVersionInfo"`
	NimbusHAVersion          string  `json:"nimbusHaVersion"`
	Supervisors              int     `json:"supervisors"`
	Topologies               int     `json:"topologies"`
	SlotsTotal               int32   `json:"slotsTotal"`
	SlotsUsed                int32   `json:"slotsUsed"`
	SlotsFree                int32   `json:"slotsFree"`
	ExecutorsTotal           int32   `json:"executorsTotal"`
	TasksTotal               int32   `json:"tasksTotal"`
	SchedulerDisplayResource bool    `json:"schedulerDisplayResource"`
	TotalMem                 float64 `json:"totalMem"`
	TotalCPU                 float64 `json:"totalCpu"`
	AvailMem                 float64 `json:"availMem"`
	AvailCPU                 float64 `json:"availCpu"`
	FragmentedMem            float64 `json:"fragmentedMem"`
	FragmentedCPU            float64 `json:"fragmentedCpu"`
	MemAssignedPercentUtil   string  `json:"memAssignedPercentUtil"`
	CPUAssignedPercentUtil   string  `json:"cpuAssignedPercentUtil"`
	BugtrackerURL            *string `json:"bugtracker-url"`
	CentralLogURL            *string `json:"central-log-url"`
	// Nimbus-HA's.
	Leader           string `json:"leader"` // host:port, "" when there is none
	EligibleStandbys int32  `json:"eligibleStandbys"`
	UIActionsEnabled bool   `json:"uiActionsEnabled"`
	// The lowest release (major.minor) any registered daemon runs.
	ClusterVersion string `json:"clusterVersion"`
}

func (a *API) clusterSummary(r *request) ([]byte, error) {
	s, err := a.snapshot(r)
	if err != nil {
		return nil, err
	}
	body, err := s.body(r, "cluster", func() any {
		cs := s.info.GetCluster()
		out := clusterSummaryJSON{
			StormVersion: StormVersion, NimbusHAVersion: a.cfg.Version,
			Supervisors: len(cs.GetSupervisors()), Topologies: len(cs.GetTopologies()),
			MemAssignedPercentUtil: "0.0", CPUAssignedPercentUtil: "0.0",
			Leader: r.state.Leader, EligibleStandbys: cs.GetEligibleStandbys(), UIActionsEnabled: a.cfg.ActionsEnabled,
			ClusterVersion: cs.GetClusterVersion(),
		}
		out.StormVersionInfo.Version, out.StormVersionInfo.Revision = StormVersion, a.cfg.Version
		for _, sup := range cs.GetSupervisors() {
			out.SlotsTotal += sup.GetNumWorkers()
			out.SlotsUsed += sup.GetNumUsedWorkers()
		}
		out.SlotsFree = max(out.SlotsTotal-out.SlotsUsed, 0)
		for _, t := range cs.GetTopologies() {
			out.ExecutorsTotal += t.GetNumExecutors()
		}
		out.TasksTotal = out.ExecutorsTotal // one task per executor
		return out
	})
	if err != nil {
		return nil, err
	}
	user := []byte(`{"user":null}`)
	if r.user != "" {
		user, _ = jsonObject("user", r.user)
	}
	// Whether this caller may hand leadership over: the UI offers it to
	// admins only (the leader decides either way).
	mayHandOver, _ := jsonObject("userMayHandOver", a.cfg.Authz.Check(r.ctx, auth.ActionHandOver, auth.Target{}) == nil)
	return join(join(body, user), mayHandOver), nil
}

// nimbusJSON is one nimbus of GET /nimbus/summary.
type nimbusJSON struct {
	Host                string `json:"host"`
	Port                int32  `json:"port"`
	Status              string `json:"status"`
	Version             string `json:"version"`
	NimbusUpTime        string `json:"nimbusUpTime"`
	NimbusUpTimeSeconds int64  `json:"nimbusUpTimeSeconds"`
	NimbusLogLink       string `json:"nimbusLogLink"`
	// Nimbus-HA's: whether it may lead (it holds every topology's code),
	// what it lacks, and the leader's term.
	Eligible          bool     `json:"eligible"`
	HoldsAllCode      bool     `json:"holdsAllCode"`
	MissingTopologies []string `json:"missingTopologies"`
	Epoch             int64    `json:"epoch"`
	Release           string   `json:"release"` // major.minor; "" when offline
}

func (a *API) nimbusSummary(r *request) ([]byte, error) {
	s, err := a.snapshot(r)
	if err != nil {
		return nil, err
	}
	return s.body(r, "nimbuses", func() any {
		var out []nimbusJSON
		seen := map[string]bool{}
		for _, n := range s.info.GetCluster().GetNimbuses() {
			status := statusFollower
			if n.GetIsLeader() {
				status = statusLeader
			}
			out = append(out, nimbusJSON{
				Host: n.GetHost(), Port: n.GetPort(), Status: status, Version: n.GetVersion(),
				NimbusUpTime: prettyUptime(n.GetUptimeSecs()), NimbusUpTimeSeconds: n.GetUptimeSecs(),
				Eligible: n.GetHoldsAllCode(), HoldsAllCode: n.GetHoldsAllCode(),
				MissingTopologies: nonNil(n.GetMissingTopologyIds()), Epoch: n.GetEpoch(), Release: n.GetRelease(),
			})
			seen[addrOf(n.GetHost(), n.GetPort())] = true
		}
		for _, seed := range a.cfg.Seeds {
			host, port, err := net.SplitHostPort(seed)
			p, perr := strconv.ParseInt(port, 10, 32)
			if err != nil || perr != nil || seen[seed] {
				continue
			}
			// Storm writes "Not applicable" as the uptime in seconds, which
			// breaks clients that parse it as a number: 0 here.
			out = append(out, nimbusJSON{Host: host, Port: int32(p), Status: statusOffline, Version: notApplicable,
				NimbusUpTime: notApplicable, MissingTopologies: []string{}})
		}
		return struct {
			Nimbuses []nimbusJSON `json:"nimbuses"`
		}{nonNil(out)}
	})
}

// supervisorJSON is one supervisor of GET /supervisor/summary and
// /supervisor.
type supervisorJSON struct {
	ID                    string             `json:"id"`
	Host                  string             `json:"host"`
	Uptime                string             `json:"uptime"`
	UptimeSeconds         int64              `json:"uptimeSeconds"`
	SlotsTotal            int32              `json:"slotsTotal"`
	SlotsUsed             int32              `json:"slotsUsed"`
	SlotsFree             int32              `json:"slotsFree"`
	TotalMem              float64            `json:"totalMem"`
	TotalCPU              float64            `json:"totalCpu"`
	UsedMem               float64            `json:"usedMem"`
	UsedCPU               float64            `json:"usedCpu"`
	AvailMem              float64            `json:"availMem"`
	AvailCPU              float64            `json:"availCpu"`
	Version               string             `json:"version"`
	Blacklisted           bool               `json:"blacklisted"`
	LogLink               string             `json:"logLink"`
	TotalGenericResources map[string]float64 `json:"totalGenericResources"`
	UsedGenericResources  map[string]float64 `json:"usedGenericResources"`
	AvailGenericResources map[string]float64 `json:"availGenericResources"`
	// Nimbus-HA's: its workers that are failing (backing off between
	// restarts), and its release (major.minor).
	WorkersFailing int    `json:"workersFailing"`
	Release        string `json:"release"`
}

func supervisorOf(sup *nimbusv1.SupervisorSummary) supervisorJSON {
	out := supervisorJSON{
		ID: sup.GetSupervisorId(), Host: sup.GetHost(),
		Uptime: prettyUptime(sup.GetUptimeSecs()), UptimeSeconds: sup.GetUptimeSecs(),
		SlotsTotal: sup.GetNumWorkers(), SlotsUsed: sup.GetNumUsedWorkers(),
		SlotsFree: max(sup.GetNumWorkers()-sup.GetNumUsedWorkers(), 0), Version: sup.GetVersion(), Release: sup.GetRelease(),
		TotalGenericResources: map[string]float64{}, UsedGenericResources: map[string]float64{}, AvailGenericResources: map[string]float64{},
	}
	for _, w := range sup.GetWorkers() {
		if failing(w) {
			out.WorkersFailing++
		}
	}
	return out
}

// failing is whether a worker is failing: backing off between restarts,
// as the supervisor reports it.
func failing(w *nimbusv1.WorkerSummary) bool { return w.GetState() == "backoff" }

func (a *API) supervisorSummary(r *request) ([]byte, error) {
	s, err := a.snapshot(r)
	if err != nil {
		return nil, err
	}
	return s.body(r, "supervisors", func() any {
		sups := s.info.GetCluster().GetSupervisors()
		out := make([]supervisorJSON, 0, len(sups))
		for _, sup := range sups {
			out = append(out, supervisorOf(sup))
		}
		return struct {
			Supervisors              []supervisorJSON `json:"supervisors"`
			SchedulerDisplayResource bool             `json:"schedulerDisplayResource"`
		}{Supervisors: out}
	})
}

// supervisor is GET /supervisor?id=ID or ?host=HOST: the supervisors
// matched (by id if given, else by host; none is an empty list, as in
// Storm) and their workers.
func (a *API) supervisor(r *request) ([]byte, error) {
	q := r.URL.Query()
	id, host := q.Get("id"), q.Get("host")
	if id == "" && host == "" {
		return nil, validate.Invalid("id", "give id or host")
	}
	if _, err := parseSys(q); err != nil {
		return nil, err
	}
	s, err := a.snapshot(r)
	if err != nil {
		return nil, err
	}
	out := struct {
		Supervisors              []supervisorJSON `json:"supervisors"`
		Workers                  []workerJSON     `json:"workers"`
		SchedulerDisplayResource bool             `json:"schedulerDisplayResource"`
	}{Supervisors: []supervisorJSON{}, Workers: []workerJSON{}}
	for _, sup := range s.info.GetCluster().GetSupervisors() {
		if (id != "" && sup.GetSupervisorId() != id) || (id == "" && sup.GetHost() != host) {
			continue
		}
		out.Supervisors = append(out.Supervisors, supervisorOf(sup))
		out.Workers = append(out.Workers, a.supervisorWorkers(r, s, sup)...)
	}
	return json.Marshal(out)
}

// supervisorWorkers is what sup reports running, each worker with its
// executors, tasks and uptime as its topology's page shows them: the
// heartbeat says what runs on a port, the topology's assignment what it
// runs (one GetTopologyInfo per topology on sup). A topology the caller
// may not read shows its workers without their executors.
func (a *API) supervisorWorkers(r *request, s *snapshot, sup *nimbusv1.SupervisorSummary) []workerJSON {
	execsOf := map[string]map[string][]*nimbusv1.ExecutorSummary{} // by topology id, then host:port
	out := make([]workerJSON, 0, len(sup.GetWorkers()))
	for _, w := range sup.GetWorkers() {
		id, t := w.GetTopologyId(), s.byID[w.GetTopologyId()]
		at, seen := execsOf[id]
		if !seen && t.GetName() != "" {
			info, err := a.cfg.Reads.GetTopologyInfo(r.ctx, &nimbusv1.GetTopologyInfoRequest{Name: t.GetName()})
			if err == nil && info.GetTopology().GetId() == id {
				at = executorsAt(info)
			}
			execsOf[id] = at
		}
		execs := at[addrOf(w.GetHost(), w.GetPort())]
		wj := workerOf(w, t, execs)
		if wj.ExecutorsTotal == 0 {
			wj.ExecutorsTotal = int32(len(execs))
		}
		out = append(out, wj)
	}
	return out
}

// clusterConfiguration is GET /cluster/configuration: the answering
// nimbus's effective configuration, one member per key with its value
// typed as Storm's JSON has it; secrets are null. Admins only, like
// GetNimbusConfig.
func (a *API) clusterConfiguration(r *request) ([]byte, error) {
	resp, err := a.cfg.Reads.GetNimbusConfig(r.ctx, &nimbusv1.GetNimbusConfigRequest{})
	if err != nil {
		return nil, err
	}
	return json.Marshal(confObject(resp.GetEntries()))
}

// confObject is a configuration as a JSON object: typed values, secrets
// null.
func confObject(entries []*nimbusv1.ConfEntry) map[string]any {
	out := make(map[string]any, len(entries))
	for _, e := range entries {
		if e.GetRedacted() {
			out[e.GetKey()] = nil
			continue
		}
		out[e.GetKey()] = confValue(e.GetKey(), e.GetValue())
	}
	return out
}
