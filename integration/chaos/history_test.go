package chaos_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Porcupine's client ids: who made an operation (for the visualization;
// the check does not use them).
const (
	clientWorkload = 0
	clientReader   = 1
	clientProbe    = 2 // + the nimbus's index: the recovery probe's flips of the canary
	clientStale    = 5 // + 0 or 1: writes sent to deposed leaders
	clientEarlier  = 7 // the possible effects of earlier attempts (history.write)
)

const (
	// checkTimeout bounds the check of a run's history. Partitions are
	// checked in parallel; a 60 s run's takes well under a second.
	checkTimeout = 30 * time.Second
	// strictTimeout bounds the second check, with linearizable reads
	// (checkHistory); the first decides if it times out.
	strictTimeout = 5 * time.Second
	// pending is the return time of an operation whose outcome is unknown
	// until the history is checked: then it is the end of the history.
	pending int64 = -1
)

// history is every client operation of a run, with its call and return
// times on one monotonic clock, as Porcupine checks it (model_test.go).
type history struct {
	start time.Time

	mu  sync.Mutex
	ops []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

// now is the history's clock: time since it started, monotonic.
func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(client int, in opInput, call int64, out opOutput, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// write records a write called at call that ended now with err. viaSDK
// says the SDK made it, retrying behind the caller's back: an earlier
// attempt may have been applied before a final refusal, even after it (a
// handler can outlive its client), so a refusal is recorded as what it
// observed and, apart, as an effect that may happen at any moment after
// the call. A submission is not retried that way: the SDK submits again
// only after ABORTED (nothing committed) or a stream that never opened.
func (h *history) write(client int, in opInput, call int64, err error, viaSDK bool) {
	ret := h.now()
	out := classify(err)
	switch out.res {
	case resUnknown:
		ret = pending
	case resRejected:
		if viaSDK && in.kind != opSubmit {
			h.add(clientEarlier, in, call, opOutput{res: resMaybe}, pending)
		}
	}
	h.add(client, in, call, out, ret)
}

// classify turns a write's error into its outcome: a definite answer
// (nil, or a refusal) or an unknown one. Unavailable, DeadlineExceeded,
// Unknown ("outcome unknown"), Internal, a context's end: the write may
// have been applied.
func classify(err error) opOutput {
	if err == nil {
		return opOutput{res: resOK}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return opOutput{res: resUnknown, why: err.Error()}
	}
	st := status.Convert(err)
	out := opOutput{res: resRejected, code: st.Code(), why: st.Message()}
	switch st.Code() {
	case codes.NotFound:
		out.obs = obsAbsent
	case codes.AlreadyExists:
	case codes.FailedPrecondition:
		out.blind = notLeader(st) // refused before the topology was read
	case codes.InvalidArgument, codes.Aborted: // validation; a submission not committed
		out.blind = true
	default:
		return opOutput{res: resUnknown, why: err.Error()}
	}
	return out
}

// notLeader: a follower's NOT_LEADER answer.
func notLeader(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == nimbusv1.ErrorDomain && info.GetReason() == nimbusv1.ReasonNotLeader {
			return true
		}
	}
	return false
}

// readStatus records a GetTopologyInfo: a status, or NotFound. A read that
// failed otherwise saw nothing and is not recorded.
func (h *history) readStatus(name string, call int64, resp *nimbusv1.GetTopologyInfoResponse, err error) {
	ret := h.now()
	var o obs
	switch {
	case err == nil:
		o = statusObs(resp.GetTopology().GetStatus())
	case status.Code(err) == codes.NotFound:
		o = obsAbsent
	default:
		return
	}
	h.add(clientReader, opInput{kind: opStatus, name: name}, call, opOutput{obs: o}, ret)
}

// readList records a GetClusterInfo: every topology it lists, by name.
func (h *history) readList(call int64, resp *nimbusv1.GetClusterInfoResponse, err error) {
	ret := h.now()
	if err != nil {
		return
	}
	list := map[string]obs{}
	for _, t := range resp.GetCluster().GetTopologies() {
		if t.GetName() != "" {
			list[t.GetName()] = statusObs(t.GetStatus())
		}
	}
	h.add(clientReader, opInput{kind: opList}, call, opOutput{list: list}, ret)
}

func statusObs(s clusterv1.TopologyStatus) obs {
	switch s {
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE:
		return obsActive
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE:
		return obsInactive
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING:
		return obsRebalancing
	case clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED:
		return obsKilled
	}
	return obsAbsent
}

// operations returns the history, each operation of unknown outcome
// returning at its end: it may take effect at any moment after its call.
func (h *history) operations() (ops []porcupine.Operation, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return resolvePending(h.ops)
}

// resolvePending is a copy of ops in which each operation of unknown
// outcome (Return pending) returns at the end of the history, and how many
// there were.
func resolvePending(history []porcupine.Operation) (ops []porcupine.Operation, unknown int) {
	ops = append([]porcupine.Operation(nil), history...)
	end := int64(0)
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
	}
	for i := range ops {
		if ops[i].Return == pending {
			ops[i].Return = end + 1
			unknown++
		}
	}
	return ops, unknown
}

// checkHistory checks the run's history with Porcupine: against the model
// whose reads may lag (the API's promise; Illegal is a violation, Unknown
// fails the run: doc.go) and, for information, against the one whose reads
// may not. The visualization is saved beside the run's logs, or in a kept
// directory if the run's is temporary and the check did not pass.
func (r *run) checkHistory() {
	ops, unknown := r.hist.operations()
	type outcome struct {
		res  porcupine.CheckResult
		info porcupine.LinearizationInfo
		took time.Duration
	}
	check := func(readsMayLag bool, timeout time.Duration) <-chan outcome {
		c := make(chan outcome, 1)
		go func() {
			start := time.Now()
			res, info := porcupine.CheckOperationsVerbose(topologyModel(readsMayLag), ops, timeout)
			c <- outcome{res, info, time.Since(start)}
		}()
		return c
	}
	laggingC, strictC := check(true, checkTimeout), check(false, strictTimeout)
	lagging, strict := <-laggingC, <-strictC
	r.mu.Lock()
	r.checked, r.checkedUnknown, r.checkResult, r.checkTook, r.strictResult = len(ops), unknown, lagging.res, lagging.took, strict.res
	r.mu.Unlock()
	r.t.Logf("chaos: linearizability: %d operations (%d of unknown outcome): %s in %s; with linearizable reads: %s in %s",
		len(ops), unknown, lagging.res, lagging.took.Round(time.Millisecond), strict.res, strict.took.Round(time.Millisecond))
	path := r.saveVisualization("linearizability.html", topologyModel(true), lagging.info, lagging.res != porcupine.Ok)
	switch lagging.res {
	case porcupine.Illegal:
		r.violation("the clients' history is not linearizable (Porcupine); see %s", path)
	case porcupine.Unknown:
		r.t.Errorf("chaos: the history's check timed out after %s: nothing was proved (see doc.go); visualization: %s", checkTimeout, path)
	}
	// The reader asks for linearizable reads (docs/ARCHITECTURE.md section
	// 11): every read must return the status of its moment.
	switch strict.res {
	case porcupine.Illegal:
		p := r.saveVisualization("linearizability-strict.html", topologyModel(false), strict.info, true)
		r.violation("with linearizable reads the history is not linearizable: a read missed a write acknowledged before it; see %s", p)
	case porcupine.Unknown:
		p := r.saveVisualization("linearizability-strict.html", topologyModel(false), strict.info, true)
		r.t.Logf("chaos: the check with linearizable reads timed out after %s (the lagging-reads check above decides); visualization: %s", strictTimeout, p)
	}
}

// saveVisualization writes Porcupine's visualization into the run's dir if
// it is kept (CHAOS_DIR), else, if keep, into a new kept directory, and
// returns its path ("" if not written).
func (r *run) saveVisualization(name string, model porcupine.Model, info porcupine.LinearizationInfo, keep bool) string {
	dir := r.dir
	if os.Getenv("CHAOS_DIR") == "" {
		if !keep {
			return ""
		}
		var err error
		if dir, err = os.MkdirTemp("", "chaos-history-"); err != nil {
			r.t.Errorf("chaos: %v", err)
			return ""
		}
	}
	path := filepath.Join(dir, name)
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		r.t.Errorf("chaos: visualization: %v", err)
		return ""
	}
	r.t.Logf("chaos: Porcupine's visualization: %s", path)
	return path
}
