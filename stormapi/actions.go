package stormapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The POST actions. Each looks the topology up by id, as Storm does, and
// asks the leader by name, as the caller: the leader authorizes and
// audits it (auth.Forward).

func (a *API) activate(r *request) ([]byte, error) {
	return a.act(r, "activate", func(ctx context.Context, name string) error {
		return a.cfg.Actions.ActivateTopology(ctx, name)
	})
}

func (a *API) deactivate(r *request) ([]byte, error) {
	return a.act(r, "deactivate", func(ctx context.Context, name string) error {
		return a.cfg.Actions.DeactivateTopology(ctx, name)
	})
}

func (a *API) kill(r *request) ([]byte, error) {
	wait, err := parseWait(r.PathValue("wait"))
	if err != nil {
		return nil, err
	}
	return a.act(r, "kill", func(ctx context.Context, name string) error {
		return a.cfg.Actions.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: &wait})
	})
}

// rebalanceBody is a rebalance's optional body, as Storm 1.x took it:
// numbers may be written as strings.
type rebalanceBody struct {
	RebalanceOptions *struct {
		NumWorkers *json.Number           `json:"numWorkers"`
		Executors  map[string]json.Number `json:"executors"`
	} `json:"rebalanceOptions"`
}

func (a *API) rebalance(r *request) ([]byte, error) {
	wait, err := parseWait(r.PathValue("wait"))
	if err != nil {
		return nil, err
	}
	req := &nimbusv1.RebalanceTopologyRequest{WaitSecs: &wait}
	if err := readRebalance(r, req); err != nil {
		return nil, err
	}
	return a.act(r, "rebalance", func(ctx context.Context, name string) error {
		req.Name = name
		return a.cfg.Actions.RebalanceTopology(ctx, req)
	})
}

// readRebalance reads a rebalance's body, if any, into req.
func readRebalance(r *request, req *nimbusv1.RebalanceTopologyRequest) error {
	var body rebalanceBody
	if err := readJSONBody(r, &body, `{"rebalanceOptions": {"numWorkers": N, "executors": {"component": N}}}`); err != nil {
		return err
	}
	opts := body.RebalanceOptions
	if opts == nil {
		return nil
	}
	if opts.NumWorkers != nil {
		n, err := positive("rebalanceOptions.numWorkers", *opts.NumWorkers)
		if err != nil {
			return err
		}
		req.NumWorkers = &n
	}
	for c, v := range opts.Executors {
		n, err := positive("rebalanceOptions.executors."+c, v)
		if err != nil {
			return err
		}
		if req.ComponentParallelism == nil {
			req.ComponentParallelism = map[string]int32{}
		}
		req.ComponentParallelism[c] = n
	}
	return nil
}

// readJSONBody decodes the request's body, if it has one, into v: one
// JSON object of the fields v knows (numbers as json.Number), within
// maxBodyBytes; shape is what the error shows the caller.
func readJSONBody(r *request, v any, shape string) error {
	raw, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return validate.Invalid("body", "larger than %d bytes", maxBodyBytes)
	case err != nil:
		return validate.Invalid("body", "%v", err)
	case len(raw) == 0:
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return validate.Invalid("body", "want %s: %v", shape, err)
	}
	return nil
}

// positive reads a count, a number or a numeric string, at least 1.
func positive(field string, v json.Number) (int32, error) {
	n, err := strconv.ParseInt(v.String(), 10, 32)
	if err != nil || n < 1 {
		return 0, validate.Invalid(field, "want a whole number of at least 1, got %s", v.String())
	}
	return int32(n), nil
}

// act takes an action on the topology the path's id names, at the
// leader, as the caller, and answers Storm's {topologyOperation,
// topologyId, status}.
func (a *API) act(r *request, op string, do func(ctx context.Context, name string) error) ([]byte, error) {
	if err := a.actionsEnabled(op); err != nil {
		return nil, err
	}
	s, err := a.snapshot(r)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	t, ok := s.byID[id]
	if !ok || t.GetName() == "" {
		return nil, fmt.Errorf("%w: no topology has id %s", apierr.ErrNotFound, quoted(id))
	}
	if err := a.atLeader(r, op+" "+t.GetName(), func(ctx context.Context) error { return do(ctx, t.GetName()) }); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"topologyOperation": op, "topologyId": id, "status": "success"})
}

// handOver hands leadership to the nimbus the query's to names (host:port),
// or to the next one that holds all code when it names none: POST
// /api/v1/nimbus/handover[?to=HOST:PORT], a Nimbus-HA endpoint. It answers
// {nimbusOperation, from, fromEpoch, to, toEpoch, leaderlessMs, status}.
func (a *API) handOver(r *request) ([]byte, error) {
	const op = "handover"
	if err := a.actionsEnabled(op); err != nil {
		return nil, err
	}
	req := &nimbusv1.HandOverRequest{To: r.URL.Query().Get("to")}
	if err := validate.HandOver(req); err != nil {
		return nil, err
	}
	var resp *nimbusv1.HandOverResponse
	err := a.atLeader(r, "hand leadership over", func(ctx context.Context) (err error) {
		resp, err = a.cfg.Actions.HandOver(ctx, req.GetTo())
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Op           string `json:"nimbusOperation"`
		From         string `json:"from"`
		FromEpoch    int64  `json:"fromEpoch"`
		To           string `json:"to"`
		ToEpoch      int64  `json:"toEpoch"`
		LeaderlessMs int64  `json:"leaderlessMs"`
		Status       string `json:"status"`
	}{op, resp.GetFrom(), resp.GetFromEpoch(), resp.GetTo(), resp.GetToEpoch(), resp.GetLeaderlessMs(), "success"})
}

// restartWorker restarts one worker of the topology the path's id names
// on its slot: POST /api/v1/topology/:id/profiling/restartworker/:host-port,
// as Storm's UI. It answers Storm's {status, id}, the id being the worker.
func (a *API) restartWorker(r *request) ([]byte, error) {
	worker := r.PathValue("worker")
	if _, _, err := validate.HostPort("worker", worker); err != nil {
		return nil, err
	}
	if _, err := a.act(r, "restartworker", func(ctx context.Context, name string) error {
		_, err := a.cfg.Actions.RestartWorker(ctx, name, worker)
		return err
	}); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"status": "ok", "id": worker})
}

// actionsEnabled refuses every action when ui.actions.enabled is false.
func (a *API) actionsEnabled(op string) error {
	if !a.cfg.ActionsEnabled {
		return fmt.Errorf("%w: %s: ui.actions.enabled is false on this nimbus", apierr.ErrPermissionDenied, op)
	}
	return nil
}

// atLeader runs do at the leader, as the caller, within the action
// timeout; what is the action, for the error when there is no leader.
func (a *API) atLeader(r *request, what string, do func(ctx context.Context) error) error {
	if r.state.Leader == "" {
		return fmt.Errorf("%w: cannot %s now; see leadershipBlockedBy", apierr.ErrNoLeader, what)
	}
	// Sent without a caller, the call would reach the leader as this
	// nimbus's certificate, which may be an admin's.
	if a.cfg.LendsIdentity {
		if err := auth.CallerToForward(r.ctx); err != nil {
			return fmt.Errorf("cannot %s: %w", what, err)
		}
	}
	ctx, cancel := context.WithTimeout(auth.Forward(r.ctx), a.cfg.ActionTimeout)
	defer cancel()
	err := do(ctx)
	if errors.Is(err, client.ErrNoLeader) {
		err = fmt.Errorf("%w: %w", apierr.ErrNoLeader, err)
	}
	return err
}
