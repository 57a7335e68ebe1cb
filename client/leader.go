package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func (c *Client) setLeader(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = addr
}

// forgetLeader drops addr as the cached leader, unless another call has
// already learned a newer one.
func (c *Client) forgetLeader(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == addr {
		c.leader = ""
	}
}

// leaderAddr returns the cached leader address, or asks any nimbus.
func (c *Client) leaderAddr(ctx context.Context) (string, error) {
	c.mu.Lock()
	addr := c.leader
	c.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	resp, err := c.GetLeader(ctx)
	if err != nil {
		return "", err
	}
	l := resp.GetLeader()
	if l.GetHost() == "" || l.GetPort() <= 0 {
		return "", status.Error(codes.Unavailable, "client: GetLeader answered without a leader address")
	}
	return net.JoinHostPort(l.GetHost(), strconv.Itoa(int(l.GetPort()))), nil
}

// retryable reports whether a leader-only call may try again after err: a
// transient failure, or a NOT_LEADER answer that named no leader (an
// election is under way).
func retryable(ctx context.Context, err error) bool {
	if _, ok := notLeader(err); ok {
		return ctx.Err() == nil
	}
	return transient(err, ctx.Err() != nil) && !handshakeFailed(err)
}

// retrier spends one call's retry budget: attempts, total time, and the
// backoff between attempts.
type retrier struct {
	c        *Client
	start    time.Time
	deadline time.Time // zero: no time limit
	attempts int       // failed attempts so far
	last     error
}

func (c *Client) newRetrier() *retrier {
	r := &retrier{c: c, start: time.Now()}
	if c.opts.retryTimeout > 0 {
		r.deadline = r.start.Add(c.opts.retryTimeout)
	}
	return r
}

// wait records a transient failure and blocks for the backoff. It returns
// an error instead when the budget is spent (a *NoLeaderError) or ctx ends.
func (r *retrier) wait(ctx context.Context, rpc string, err error) error {
	r.attempts++
	r.last = err
	now := time.Now()
	limit := r.c.opts.maxAttempts
	if (limit > 0 && r.attempts >= limit) || (!r.deadline.IsZero() && !now.Before(r.deadline)) {
		return &NoLeaderError{Attempts: r.attempts, Elapsed: now.Sub(r.start), Err: err}
	}
	// Full jitter: uniform in [0, window), the window doubling per attempt,
	// so clients that failed together do not retry together.
	window := backoffMax
	if shift := r.attempts - 1; shift < 16 && backoffBase<<shift < backoffMax {
		window = backoffBase << shift
	}
	d := rand.N(window)
	if !r.deadline.IsZero() {
		d = min(d, r.deadline.Sub(now))
	}
	r.c.log.Debug("leader call failed; retrying", "rpc", rpc, "attempt", r.attempts, "delay", d, "err", err)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return r.ctxErr(ctx, err)
	case <-t.C:
		return nil
	}
}

// retryAfter is what a leader call does with an attempt at addr ("" if no
// leader was found) that failed with err: an error to return (one that is
// not worth retrying, or the budget spent), or nil once the leader is
// forgotten and the backoff waited, to try again.
func (r *retrier) retryAfter(ctx context.Context, rpc, addr string, err error) error {
	if !retryable(ctx, err) {
		if ctx.Err() != nil {
			return r.ctxErr(ctx, err)
		}
		return err
	}
	if addr != "" {
		r.c.forgetLeader(addr)
	}
	return r.wait(ctx, rpc, err)
}

// ctxErr is the error of a call whose context ended while it retried: it
// wraps the context's error and the last failure, so both errors.Is(err,
// context.DeadlineExceeded) and status.Code(err) tell what happened.
func (r *retrier) ctxErr(ctx context.Context, err error) error {
	if r.last == nil {
		return err
	}
	return fmt.Errorf("client: %w after %d attempts; last error: %w", ctx.Err(), r.attempts, r.last)
}

// callLeader makes call at the leader. It follows NOT_LEADER redirects (at
// most maxRedirects) and retries transient failures, rediscovering the
// leader, until the retry budget is spent. Only idempotent calls may use
// it: a retried attempt may repeat one that took effect.
func callLeader[Resp any](ctx context.Context, c *Client, rpc string, call unaryCall[Resp]) (Resp, error) {
	return leaderCall(ctx, c, rpc, call, true)
}

// callLeaderOnce is callLeader for a call that must not be repeated: a
// failure is retried only when the call cannot have reached a leader (no
// leader was found, no connection could be made, a follower answered
// NOT_LEADER).
func callLeaderOnce[Resp any](ctx context.Context, c *Client, rpc string, call unaryCall[Resp]) (Resp, error) {
	return leaderCall(ctx, c, rpc, call, false)
}

func leaderCall[Resp any](ctx context.Context, c *Client, rpc string, call unaryCall[Resp], idempotent bool) (Resp, error) {
	var zero Resp
	r := c.newRetrier()
	redirects := 0
	for {
		addr, err := c.leaderAddr(ctx)
		if err == nil {
			var resp Resp
			var f SeedFailure
			resp, f, err = callAt(ctx, c, addr, call)
			if err == nil {
				return resp, nil
			}
			if f.Dial != nil { // say why no connection could be made
				err = &NoSeedAnsweredError{Failures: []SeedFailure{f}}
			}
			to, wasNotLeader := notLeader(err)
			if !idempotent && f.Dial == nil && !wasNotLeader {
				return zero, err // it may have taken effect
			}
			if wasNotLeader && to != "" {
				if rerr := c.redirect(rpc, addr, to, &redirects, err); rerr != nil {
					return zero, rerr
				}
				continue
			}
		}
		if rerr := r.retryAfter(ctx, rpc, addr, err); rerr != nil {
			return zero, rerr
		}
	}
}

// redirect makes to, named by the NOT_LEADER answer err of the nimbus at
// from, the leader the call tries next, and counts the redirect. It
// returns the error to end the call with instead when the call has
// followed maxRedirects already or to is not an address.
func (c *Client) redirect(rpc, from, to string, redirects *int, err error) error {
	if *redirects >= c.opts.maxRedirects {
		return fmt.Errorf("client: %s: gave up after %d leader redirects: %w", rpc, *redirects, err)
	}
	if verr := validateAddr(to); verr != nil {
		return fmt.Errorf("client: %s: redirect to bad leader address %q: %w", rpc, to, err)
	}
	*redirects++
	c.log.Debug("following leader redirect", "rpc", rpc, "from", from, "to", to)
	c.learn(to)
	c.setLeader(to)
	return nil
}

// KillTopology kills the named topology at the leader: the leader marks it
// KILLED and answers at once; it removes the topology wait_secs later
// (unset: topology.message.timeout.secs). So each attempt is bounded by the
// call timeout like any unary call. Safe to retry: killing a topology that
// is already being killed does no harm. An unknown name is NotFound.
func (c *Client) KillTopology(ctx context.Context, req *nimbusv1.KillTopologyRequest) error {
	_, err := callLeader(ctx, c, "KillTopology", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.KillTopologyResponse, error) {
		return api.KillTopology(ctx, req, opts...)
	})
	return err
}

// ActivateTopology sets the named topology's status to ACTIVE at the
// leader. It is idempotent, so it is retried like every leader-only call.
// An unknown name is NotFound.
func (c *Client) ActivateTopology(ctx context.Context, name string) error {
	_, err := callLeader(ctx, c, "ActivateTopology", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.ActivateTopologyResponse, error) {
		return api.ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: name}, opts...)
	})
	return err
}

// RestartWorker asks the leader to restart one worker of the named
// topology on its slot; worker is its host:port, as GetTopologyInfo names
// it. A restart is not repeated on a retry: a failure is retried only when
// the call cannot have reached a leader (ErrOutcomeUnknown-like answers
// come back to the caller). Refused (PermissionDenied) for anyone but the
// topology's owner and admins; NotFound for a worker the topology does not
// have.
func (c *Client) RestartWorker(ctx context.Context, name, worker string) (*nimbusv1.RestartWorkerResponse, error) {
	return callLeaderOnce(ctx, c, "RestartWorker", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.RestartWorkerResponse, error) {
		return api.RestartWorker(ctx, &nimbusv1.RestartWorkerRequest{Name: name, Worker: worker}, opts...)
	})
}

// SetLogConfig changes the named topology's log levels at the leader
// (req.Name names it) and returns them as they are after the change. It
// is retried like every leader-only call: setting the same levels again
// only moves their timeouts on.
func (c *Client) SetLogConfig(ctx context.Context, req *nimbusv1.SetLogConfigRequest) (*nimbusv1.SetLogConfigResponse, error) {
	return callLeader(ctx, c, "SetLogConfig", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.SetLogConfigResponse, error) {
		return api.SetLogConfig(ctx, req, opts...)
	})
}

// DeactivateTopology sets the named topology's status to INACTIVE at the
// leader. It is idempotent, so it is retried like every leader-only call.
// An unknown name is NotFound.
func (c *Client) DeactivateTopology(ctx context.Context, name string) error {
	_, err := callLeader(ctx, c, "DeactivateTopology", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.DeactivateTopologyResponse, error) {
		return api.DeactivateTopology(ctx, &nimbusv1.DeactivateTopologyRequest{Name: name}, opts...)
	})
	return err
}

// RebalanceTopology changes the named topology's workers or parallelism at
// the leader, after wait_secs. Safe to retry: it sets a target, it does
// not add to one.
func (c *Client) RebalanceTopology(ctx context.Context, req *nimbusv1.RebalanceTopologyRequest) error {
	_, err := callLeader(ctx, c, "RebalanceTopology", func(ctx context.Context, api nimbusv1.NimbusServiceClient, opts ...grpc.CallOption) (*nimbusv1.RebalanceTopologyResponse, error) {
		return api.RebalanceTopology(ctx, req, opts...)
	})
	return err
}
