package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

const canaryName = "canary"

// spec is a topology of the example worker program.
func spec(name string, workers int32) *nimbusv1.TopologySpec {
	return &nimbusv1.TopologySpec{
		Name: name, NumWorkers: workers, Owner: "chaos",
		Components:    []*nimbusv1.ComponentSpec{{Id: "sentence", Parallelism: 1}, {Id: "split", Parallelism: 2}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
	}
}

// submit submits a topology and records it once acknowledged.
func (r *run) submit(ctx context.Context, name string, workers int32) error {
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	call := r.hist.now()
	resp, err := r.client.SubmitTopology(ctx, spec(name, workers), bytes.NewReader(r.artifact), int64(len(r.artifact)), nil)
	r.hist.write(clientWorkload, opInput{kind: opSubmit, name: name}, call, err, true)
	r.tally(ctx, "submit", err)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[name] = true
	r.submitted++
	if err != nil {
		return err
	}
	r.acked[resp.GetTopologyId()] = name
	return nil
}

// canary is the topology whose status the recovery probe flips.
func (r *run) canary() {
	if err := r.submit(r.t.Context(), canaryName, 1); err != nil {
		r.t.Fatalf("submit the canary: %v", err)
	}
}

// workload keeps two to four topologies alive, submitting, killing,
// rebalancing, activating and deactivating them at random, until ctx ends.
func (r *run) workload(ctx context.Context, rng *rand.Rand) {
	seq := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(200+rng.IntN(600)) * time.Millisecond):
		}
		live := r.live()
		op := []string{"submit", "kill", "rebalance", "activate", "deactivate"}[rng.IntN(5)]
		switch {
		case len(live) < 2:
			op = "submit"
		case len(live) >= 4 && op == "submit":
			op = "kill"
		}
		var err error
		switch op {
		case "submit":
			seq++
			err = r.submit(ctx, fmt.Sprintf("w%d", seq), int32(1+rng.IntN(2)))
		case "kill":
			id, name := pick(rng, live)
			r.mu.Lock()
			r.killAsked[id] = true // whatever the answer: it may have happened
			r.mu.Unlock()
			err = r.call(ctx, opInput{kind: opKill, name: name}, func(ctx context.Context) error {
				return r.client.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: new(int32(0))})
			})
		case "rebalance":
			_, name := pick(rng, live)
			workers := int32(1 + rng.IntN(2))
			err = r.call(ctx, opInput{kind: opRebalance, name: name, workers: workers}, func(ctx context.Context) error {
				return r.client.RebalanceTopology(ctx, &nimbusv1.RebalanceTopologyRequest{
					Name: name, WaitSecs: new(int32(0)), NumWorkers: new(workers)})
			})
		case "activate":
			_, name := pick(rng, live)
			err = r.call(ctx, opInput{kind: opActivate, name: name}, func(ctx context.Context) error {
				return r.client.ActivateTopology(ctx, name)
			})
		case "deactivate":
			_, name := pick(rng, live)
			err = r.call(ctx, opInput{kind: opDeactivate, name: name}, func(ctx context.Context) error {
				return r.client.DeactivateTopology(ctx, name)
			})
		}
		if err != nil && ctx.Err() == nil {
			r.t.Logf("chaos: client %s: %v", op, err)
		}
	}
}

// call makes a leader write through the SDK and records it.
func (r *run) call(ctx context.Context, in opInput, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	call := r.hist.now()
	err := f(ctx)
	r.hist.write(clientWorkload, in, call, err, true)
	r.tally(ctx, in.kind.String(), err)
	return err
}

// maxFailures is how many failed calls a run keeps, to show.
const maxFailures = 10

// tally counts a client call by kind as succeeded, refused for the
// topology's status (FAILED_PRECONDITION without NOT_LEADER: an answer,
// which the history's check explains) or failed; a call cut short by the
// end of the run (ctx's) is not counted.
func (r *run) tally(ctx context.Context, kind string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.ops[kind]++
	case ctx.Err() != nil:
	case status.Code(err) == codes.FailedPrecondition && !notLeader(status.Convert(err)):
		r.refused[kind]++
	default:
		r.opErrors[kind]++
		if len(r.failures) < maxFailures {
			r.failures = append(r.failures, fmt.Sprintf("%s at %s: %v", kind, time.Now().Format("15:04:05.000"), err))
		}
	}
}

// reader reads, every 100 to 400 ms until ctx ends, through the SDK as
// users do: the topology list, or the status of one topology the workload
// named (submitted, killed or the canary).
func (r *run) reader(ctx context.Context, rng *rand.Rand) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(100+rng.IntN(300)) * time.Millisecond):
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if names := r.named(); rng.IntN(2) == 0 && len(names) > 0 {
			name := names[rng.IntN(len(names))]
			call := r.hist.now()
			resp, err := r.client.GetTopologyInfo(rctx, name, client.LinearizableTopologyInfo())
			r.hist.readStatus(name, call, resp, err)
			if status.Code(err) == codes.NotFound {
				err = nil // an answer: no such topology (now)
			}
			r.tally(ctx, "read-topology", err)
		} else {
			call := r.hist.now()
			resp, err := r.client.GetClusterInfo(rctx, client.LinearizableClusterInfo())
			r.hist.readList(call, resp, err)
			r.tally(ctx, "read-cluster", err)
		}
		cancel()
	}
}

// named returns every name the workload submitted (or tried to), sorted.
func (r *run) named() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.names))
}

// live returns the acknowledged topologies no kill was asked for, but
// the canary, by id.
func (r *run) live() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for id, name := range r.acked {
		if !r.killAsked[id] && name != canaryName {
			out[id] = name
		}
	}
	return out
}

func pick(rng *rand.Rand, m map[string]string) (id, name string) {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids) // map order is random; the seed must decide
	id = ids[rng.IntN(len(ids))]
	return id, m[id]
}
