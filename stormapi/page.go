package stormapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// keyMessageTimeout is the conf key of msgTimeout.
const keyMessageTimeout = "topology.message.timeout.secs"

// windowStatsJSON is one window of a topology's or spout's tuple counts
// (stats.go): null where no worker reported in the window.
type windowStatsJSON struct {
	Window          string  `json:"window"`
	WindowPretty    string  `json:"windowPretty"`
	Emitted         *uint64 `json:"emitted"`
	Transferred     *uint64 `json:"transferred"`
	Acked           *uint64 `json:"acked"`
	Failed          *uint64 `json:"failed"`
	CompleteLatency *string `json:"completeLatency"`
}

// boltStatsJSON is one window of a bolt's counts, as windowStatsJSON.
type boltStatsJSON struct {
	Window         string  `json:"window"`
	WindowPretty   string  `json:"windowPretty"`
	Emitted        *uint64 `json:"emitted"`
	Transferred    *uint64 `json:"transferred"`
	Executed       *uint64 `json:"executed"`
	Acked          *uint64 `json:"acked"`
	Failed         *uint64 `json:"failed"`
	Capacity       *string `json:"capacity"`
	ExecuteLatency *string `json:"executeLatency"`
	ProcessLatency *string `json:"processLatency"`
}

// componentError is a component's last error: the latest one a worker
// running it reported (the worker protocol's error file), null fields when
// none did.
type componentError struct {
	LastError          string `json:"lastError"`
	ErrorHost          string `json:"errorHost"`
	ErrorPort          *int32 `json:"errorPort"`
	ErrorTime          *int64 `json:"errorTime"` // Unix seconds
	ErrorLapsedSecs    *int64 `json:"errorLapsedSecs"`
	ErrorWorkerLogLink string `json:"errorWorkerLogLink"`
}

// componentStats are a component's counts in the page's window, null
// where none were reported.
type componentStats struct {
	Executors           int32   `json:"executors"`
	Tasks               int32   `json:"tasks"`
	Emitted             *uint64 `json:"emitted"`
	Transferred         *uint64 `json:"transferred"`
	Acked               *uint64 `json:"acked"`
	Failed              *uint64 `json:"failed"`
	RequestedMemOnHeap  float64 `json:"requestedMemOnHeap"`
	RequestedMemOffHeap float64 `json:"requestedMemOffHeap"`
	RequestedCPU        float64 `json:"requestedCpu"`
}

type spoutJSON struct {
	SpoutID        string `json:"spoutId"`
	EncodedSpoutID string `json:"encodedSpoutId"`
	componentStats
	CompleteLatency *string `json:"completeLatency"`
	componentError
}

type boltJSON struct {
	BoltID        string `json:"boltId"`
	EncodedBoltID string `json:"encodedBoltId"`
	componentStats
	Executed       *uint64 `json:"executed"`
	Capacity       *string `json:"capacity"`
	ExecuteLatency *string `json:"executeLatency"`
	ProcessLatency *string `json:"processLatency"`
	componentError
}

// executorJSON is one executor (Nimbus-HA's extra on the topology page).
type executorJSON struct {
	ID            string `json:"id"` // "[start-end]", as Storm writes it
	Component     string `json:"component"`
	TaskStart     int32  `json:"taskStart"`
	TaskEnd       int32  `json:"taskEnd"`
	Host          string `json:"host"`
	Port          int32  `json:"port"`
	SupervisorID  string `json:"supervisorId"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
}

type hostPortJSON struct {
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// topologyPageJSON is GET /topology/:id.
type topologyPageJSON struct {
	topologyJSON
	User                     *string           `json:"user"`
	MsgTimeout               int64             `json:"msgTimeout"`
	Window                   string            `json:"window"`
	WindowHint               string            `json:"windowHint"`
	SchedulerDisplayResource bool              `json:"schedulerDisplayResource"`
	Debug                    bool              `json:"debug"`
	SamplingPct              float64           `json:"samplingPct"`
	Configuration            map[string]any    `json:"configuration"`
	TopologyStats            []windowStatsJSON `json:"topologyStats"`
	Workers                  []workerJSON      `json:"workers"`
	Spouts                   []spoutJSON       `json:"spouts"`
	Bolts                    []boltJSON        `json:"bolts"`
	VisualizationTable       []any             `json:"visualizationTable"`
	// Storm's resource-aware scheduler's split of memory: zeros.
	RequestedRegularOnHeapMem  float64 `json:"requestedRegularOnHeapMem"`
	RequestedSharedOnHeapMem   float64 `json:"requestedSharedOnHeapMem"`
	RequestedRegularOffHeapMem float64 `json:"requestedRegularOffHeapMem"`
	RequestedSharedOffHeapMem  float64 `json:"requestedSharedOffHeapMem"`
	AssignedRegularOnHeapMem   float64 `json:"assignedRegularOnHeapMem"`
	AssignedSharedOnHeapMem    float64 `json:"assignedSharedOnHeapMem"`
	AssignedRegularOffHeapMem  float64 `json:"assignedRegularOffHeapMem"`
	AssignedSharedOffHeapMem   float64 `json:"assignedSharedOffHeapMem"`
	// Nimbus-HA's: executors, the nimbuses holding its code, and why the
	// configuration is empty when it is (the caller may not read it, or
	// this nimbus does not hold the code yet).
	Executors          []executorJSON `json:"executors"`
	Replicas           []hostPortJSON `json:"replicas"`
	ConfigurationError string         `json:"configurationError"`
	// Nimbus-HA's: whether any worker of the topology reported counts
	// (false: every count is null, "no data"), and the Storm window the
	// counts of spouts and bolts come from (statsWindowOf).
	StatsReported bool   `json:"statsReported"`
	StatsWindow   string `json:"statsWindow"`
	// Nimbus-HA's: whether the caller may restart one of its workers and
	// set its log levels (userMay), for the UI to offer them.
	UserMayRestartWorkers bool `json:"userMayRestartWorkers"`
	UserMaySetLogConfig   bool `json:"userMaySetLogConfig"`
}

func (a *API) topology(r *request) ([]byte, error) {
	window, hint, sys, err := pageParams(r.URL.Query())
	if err != nil {
		return nil, err
	}
	s, info, err := a.topologyInfoIn(r, window)
	if err != nil {
		return nil, err
	}
	t, at := info.GetTopology(), executorsAt(info)
	out := topologyPageJSON{
		topologyJSON: topologyOf(t), User: userOf(r), Window: window, WindowHint: hint,
		Configuration: map[string]any{}, TopologyStats: topologyStatsOf(info.GetStats()), Workers: []workerJSON{},
		VisualizationTable: []any{}, Executors: executorsOf(info), Replicas: []hostPortJSON{},
		StatsReported: info.GetStats() != nil, StatsWindow: statsWindowOf(window),
	}
	for _, w := range info.GetWorkers() {
		out.Workers = append(out.Workers, workerOf(w, s.byID[t.GetId()], at[addrOf(w.GetHost(), w.GetPort())]))
	}
	out.Spouts, out.Bolts = componentsOf(info, sys, at, a.cfg.Now())
	for _, rep := range info.GetReplicas() {
		out.Replicas = append(out.Replicas, hostPortJSON{rep.GetHost(), rep.GetPort()})
	}
	a.addConf(r, &out)
	return json.Marshal(out)
}

// componentsOf lists a topology's spouts and bolts: their parallelism,
// counts in the stats' window and last error.
func componentsOf(info *nimbusv1.GetTopologyInfoResponse, sys bool, at map[string][]*nimbusv1.ExecutorSummary, now time.Time) ([]spoutJSON, []boltJSON) {
	spouts, bolts := []spoutJSON{}, []boltJSON{}
	st := info.GetStats()
	for _, c := range components(info, sys) {
		cs := componentStatsOf(st, c)
		k := counts(cs.GetWindows(), st.GetWindow())
		stats := componentStats{Executors: info.GetComponentParallelism()[c], Tasks: tasksOf(info, c),
			Emitted: num(k, emitted), Transferred: num(k, transferred), Acked: num(k, acked), Failed: num(k, failed)}
		errs := lastErrorOf(c, info, at, now)
		if isSpout(info, c) {
			spouts = append(spouts, spoutJSON{SpoutID: c, EncodedSpoutID: url.PathEscape(c),
				componentStats: stats, CompleteLatency: latency(k, completeUs, acked), componentError: errs})
			continue
		}
		bolts = append(bolts, boltJSON{BoltID: c, EncodedBoltID: url.PathEscape(c), componentStats: stats,
			Executed: num(k, executed), Capacity: capacityOf(cs), ExecuteLatency: latency(k, executeUs, executed),
			ProcessLatency: latency(k, processUs, acked), componentError: errs})
	}
	return spouts, bolts
}

// executorsOf lists a topology's assigned executors.
func executorsOf(info *nimbusv1.GetTopologyInfoResponse) []executorJSON {
	out := []executorJSON{}
	for _, e := range info.GetExecutors() {
		x := e.GetExecutor()
		out = append(out, executorJSON{
			ID: executorID(x), Component: x.GetComponentId(), TaskStart: x.GetTaskStart(), TaskEnd: x.GetTaskEnd(),
			Host: e.GetHost(), Port: e.GetPort(), SupervisorID: e.GetSupervisorId(), UptimeSeconds: e.GetUptimeSecs(),
		})
	}
	return out
}

// addConf adds the topology's configuration to its page, and its
// msgTimeout, if the caller may read it; else says why not. It adds what
// the caller may do to the topology, which its topology.users decide.
func (a *API) addConf(r *request, out *topologyPageJSON) {
	conf, err := a.cfg.Reads.GetTopologyConf(r.ctx, &nimbusv1.GetTopologyConfRequest{Name: out.Name})
	out.UserMayRestartWorkers, out.UserMaySetLogConfig = a.userMay(r, out.ID, out.Owner, conf.GetEntries())
	if err != nil {
		out.ConfigurationError = err.Error()
		return
	}
	out.Configuration = confObject(conf.GetEntries())
	if n, ok := out.Configuration[keyMessageTimeout].(int64); ok {
		out.MsgTimeout = n
	}
}

// pageParams reads the window and sys query parameters of a topology's
// pages.
func pageParams(q url.Values) (window, hint string, sys bool, err error) {
	if window, hint, err = parseWindow(q); err != nil {
		return "", "", false, err
	}
	sys, err = parseSys(q)
	return window, hint, sys, err
}

// userOf is the caller as Storm's "user" field: null when anonymous.
func userOf(r *request) *string {
	if r.user == "" {
		return nil
	}
	return &r.user
}

// executorID is how Storm names an executor: "[start-end]".
func executorID(x *clusterv1.Executor) string {
	return "[" + strconv.Itoa(int(x.GetTaskStart())) + "-" + strconv.Itoa(int(x.GetTaskEnd())) + "]"
}

// tasksOf counts component c's tasks over its assigned executors, or its
// parallelism while it has none.
func tasksOf(info *nimbusv1.GetTopologyInfoResponse, c string) int32 {
	var n int32
	for _, e := range info.GetExecutors() {
		if x := e.GetExecutor(); x.GetComponentId() == c {
			n += x.GetTaskEnd() - x.GetTaskStart() + 1
		}
	}
	if n == 0 {
		return info.GetComponentParallelism()[c]
	}
	return n
}

// lastErrorOf is the latest error reported by a worker that runs
// component c.
func lastErrorOf(c string, info *nimbusv1.GetTopologyInfoResponse, at map[string][]*nimbusv1.ExecutorSummary, now time.Time) componentError {
	var latest *nimbusv1.WorkerSummary
	for _, w := range info.GetWorkers() {
		if w.GetLastError() == "" || (latest != nil && w.GetLastErrorUnixMs() <= latest.GetLastErrorUnixMs()) {
			continue
		}
		for _, e := range at[addrOf(w.GetHost(), w.GetPort())] {
			if e.GetExecutor().GetComponentId() == c {
				latest = w
				break
			}
		}
	}
	if latest == nil {
		return componentError{}
	}
	port, when := latest.GetPort(), latest.GetLastErrorUnixMs()/1000
	lapsed := max(now.Unix()-when, 0)
	return componentError{LastError: latest.GetLastError(), ErrorHost: latest.GetHost(),
		ErrorPort: &port, ErrorTime: &when, ErrorLapsedSecs: &lapsed, ErrorWorkerLogLink: latest.GetLogLink()}
}

// topologyWorkers is GET /topology-workers/:id: where its workers run.
// logviewerPort is 0: each supervisor names its own logviewer, and each
// worker's link to its log is the topology page's workerLogLink.
func (a *API) topologyWorkers(r *request) ([]byte, error) {
	_, info, err := a.topologyInfo(r)
	if err != nil {
		return nil, err
	}
	out := struct {
		HostPortList  []hostPortJSON `json:"hostPortList"`
		LogviewerPort int            `json:"logviewerPort"`
	}{HostPortList: []hostPortJSON{}}
	for _, w := range info.GetWorkers() {
		out.HostPortList = append(out.HostPortList, hostPortJSON{w.GetHost(), w.GetPort()})
	}
	return json.Marshal(out)
}

// componentErrorJSON is one error of a component page.
type componentErrorJSON struct {
	ErrorTime          int64  `json:"errorTime"` // Unix seconds, as on the topology page
	ErrorHost          string `json:"errorHost"`
	ErrorPort          int32  `json:"errorPort"`
	Error              string `json:"error"`
	ErrorLapsedSecs    int64  `json:"errorLapsedSecs"`
	ErrorWorkerLogLink string `json:"errorWorkerLogLink"`
}

// executorStatsJSON is one executor of a component page: an even share
// of its worker's counts of the component (executorCounts), null where
// none were reported.
type executorStatsJSON struct {
	ID              string  `json:"id"`
	EncodedID       string  `json:"encodedId"`
	Host            string  `json:"host"`
	Port            int32   `json:"port"`
	Uptime          string  `json:"uptime"`
	UptimeSeconds   int64   `json:"uptimeSeconds"`
	WorkerLogLink   string  `json:"workerLogLink"`
	Emitted         *uint64 `json:"emitted"`
	Transferred     *uint64 `json:"transferred"`
	Acked           *uint64 `json:"acked"`
	Failed          *uint64 `json:"failed"`
	Executed        *uint64 `json:"executed"`
	CompleteLatency *string `json:"completeLatency"`
	Capacity        *string `json:"capacity"`
	ExecuteLatency  *string `json:"executeLatency"`
	ProcessLatency  *string `json:"processLatency"`
}

// component is GET /topology/:id/component/:component.
func (a *API) component(r *request) ([]byte, error) {
	window, hint, err := parseWindow(r.URL.Query())
	if err != nil {
		return nil, err
	}
	_, info, err := a.topologyInfoIn(r, window)
	if err != nil {
		return nil, err
	}
	c := r.PathValue("component")
	if _, ok := info.GetComponentParallelism()[c]; !ok {
		return nil, fmt.Errorf("%w: topology %s has no component %s", apierr.ErrNotFound, info.GetTopology().GetName(), quoted(c))
	}
	t := info.GetTopology()
	kind := "bolt"
	if isSpout(info, c) {
		kind = "spout"
	}
	out := map[string]any{
		"user": userOf(r), "id": c, "encodedId": url.PathEscape(c), "name": t.GetName(),
		"topologyId": t.GetId(), "encodedTopologyId": url.PathEscape(t.GetId()), "topologyStatus": statusName(t.GetStatus()),
		"componentType": kind, "executors": info.GetComponentParallelism()[c], "tasks": tasksOf(info, c),
		"window": window, "windowHint": hint,
		"requestedMemOnHeap": 0.0, "requestedMemOffHeap": 0.0, "requestedCpu": 0.0, "requestedGenericResources": "",
		"schedulerDisplayResource": false, "debug": false, "samplingPct": 0.0, "eventLogLink": "",
		"profilingAndDebuggingCapable": false, "profileActionEnabled": false, "profilerActive": []any{},
		"statsReported": info.GetStats() != nil, "statsWindow": statsWindowOf(window),
	}
	cs := componentStatsOf(info.GetStats(), c)
	outputs, inputs := streamStatsOf(info.GetStats(), c, kind == "spout")
	out["outputStats"] = outputs
	if kind == "spout" {
		out["spoutSummary"] = spoutSummaryOf(cs)
		out["inputStats"] = []any{}
	} else {
		out["boltStats"] = boltStatsOf(cs)
		out["inputStats"] = inputs
	}
	out["componentErrors"] = componentErrorsOf(c, info, a.cfg.Now())
	out["executorStats"] = executorStatsOf(c, info)
	return json.Marshal(out)
}

// componentErrorsOf is component c's last error, if a worker running it
// reported one.
func componentErrorsOf(c string, info *nimbusv1.GetTopologyInfoResponse, now time.Time) []componentErrorJSON {
	e := lastErrorOf(c, info, executorsAt(info), now)
	if e.ErrorTime == nil {
		return []componentErrorJSON{}
	}
	return []componentErrorJSON{{ErrorTime: *e.ErrorTime, ErrorHost: e.ErrorHost, ErrorPort: *e.ErrorPort,
		Error: e.LastError, ErrorLapsedSecs: *e.ErrorLapsedSecs, ErrorWorkerLogLink: e.ErrorWorkerLogLink}}
}

// executorStatsOf lists component c's executors and their counts.
func executorStatsOf(c string, info *nimbusv1.GetTopologyInfoResponse) []executorStatsJSON {
	out := []executorStatsJSON{}
	links := logLinks(info)
	for _, e := range info.GetExecutors() {
		if e.GetExecutor().GetComponentId() != c {
			continue
		}
		id := executorID(e.GetExecutor())
		k, capacity := executorCounts(info.GetStats(), e)
		x := executorStatsJSON{ID: id, EncodedID: url.PathEscape(id), Host: e.GetHost(), Port: e.GetPort(),
			Uptime: prettyUptime(e.GetUptimeSecs()), UptimeSeconds: e.GetUptimeSecs(), WorkerLogLink: links[addrOf(e.GetHost(), e.GetPort())],
			Emitted: num(k, emitted), Transferred: num(k, transferred), Acked: num(k, acked), Failed: num(k, failed),
			Executed: num(k, executed), CompleteLatency: latency(k, completeUs, acked),
			ExecuteLatency: latency(k, executeUs, executed), ProcessLatency: latency(k, processUs, acked)}
		if k != nil && !isSpout(info, c) {
			cap := strconv.FormatFloat(capacity, 'f', 3, 64)
			x.Capacity = &cap
		}
		out = append(out, x)
	}
	return out
}

// metrics is GET /topology/:id/metrics: per-stream tuple counts in the
// window (Datadog's check reads it from Storm 1.2.0 on); a component with
// no counts has empty arrays.
func (a *API) metrics(r *request) ([]byte, error) {
	window, hint, sys, err := pageParams(r.URL.Query())
	if err != nil {
		return nil, err
	}
	_, info, err := a.topologyInfoIn(r, window)
	if err != nil {
		return nil, err
	}
	spouts, bolts := []map[string]any{}, []map[string]any{}
	for _, c := range components(info, sys) {
		if isSpout(info, c) {
			spouts = append(spouts, metricsOf(info.GetStats(), c, true))
			continue
		}
		bolts = append(bolts, metricsOf(info.GetStats(), c, false))
	}
	// Storm's /metrics spells it "window-hint"; "windowHint" as the
	// other pages do, for this UI.
	return json.Marshal(map[string]any{"window": window, "window-hint": hint, "windowHint": hint, "spouts": spouts, "bolts": bolts,
		"statsReported": info.GetStats() != nil, "statsWindow": statsWindowOf(window)})
}
