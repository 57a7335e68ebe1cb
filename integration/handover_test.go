package integration

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// TestHandOver hands leadership over on purpose, on three nimbuses with a
// worker running and a client calling the leader throughout: to a named
// nimbus queued last (the one between queues again), to the next one
// (through stormctl), refused for an unknown address and for a nimbus
// that lacks a topology's code; and a leader stopped with SIGTERM passes
// over a queued nimbus that lacks code. The client sees no error, the
// worker keeps its pid, and each hand-over reports its time without a
// leader.
func TestHandOver(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	// A session that outlasts the SIGSTOP below: the stopped nimbus stays
	// registered and queued meanwhile.
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(10*time.Second))
	ps := c.StartNimbuses(t, 3)
	c.WaitLeader(t, ps, 15*time.Second)
	sups := c.StartSupervisors(t, 1)
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 10*time.Second, z.Addr())
	id := submitSleeper(t, cl, "handover", 1).GetTopologyId()
	pids := sleepers(t, conn, id, 1, 30*time.Second, sups...)
	c.WaitQueued(t, 3, 20*time.Second)

	calls := callLeaderThroughout(t, newClient(t, c, ps...), "handover")

	// To the nimbus queued last: the one before it is passed over and
	// queues again.
	queue := leaderQueue(t, conn, c.Root, 3)
	from, to := byAddr(t, ps, queue[0]), byAddr(t, ps, queue[2])
	resp, err := cl.HandOver(t.Context(), to.Addr())
	if err != nil {
		t.Fatalf("hand over to %s: %v", to.Name, err)
	}
	if resp.GetFrom() != from.Addr() || resp.GetTo() != to.Addr() || resp.GetToEpoch() <= resp.GetFromEpoch() {
		t.Errorf("hand-over answered %v; want from %s to %s, a later epoch", resp, from.Addr(), to.Addr())
	}
	t.Logf("handed over from %s to %s (passing over %s): %d ms without a leader", from.Name, to.Name, queue[1], resp.GetLeaderlessMs())
	if epoch, now := c.WaitLeader(t, ps, 10*time.Second); now != to || epoch != resp.GetToEpoch() {
		t.Errorf("after the hand-over %s leads at epoch %d, want %s at %d", now.Name, epoch, to.Name, resp.GetToEpoch())
	}
	c.WaitQueued(t, 3, 10*time.Second)
	if got := leaderQueue(t, conn, c.Root, 3); got[0] != to.Addr() {
		t.Errorf("queue after the hand-over: %v", got)
	}
	// Naming the leader changes nothing: a retried hand-over is harmless.
	if again, err := cl.HandOver(t.Context(), to.Addr()); err != nil || again.GetFrom() != to.Addr() || again.GetToEpoch() != resp.GetToEpoch() {
		t.Errorf("hand over to the leader: %v, %v; want nothing done", again, err)
	}

	// To the next, through stormctl.
	out, errOut, code := stormctl(t, "--seeds", ps[0].Addr(), "admin", "handover")
	if code != 0 || !strings.Contains(out, "handed leadership from "+to.Addr()) || !strings.Contains(out, "ms without a leader") {
		t.Fatalf("stormctl admin handover: exit %d\n%s%s", code, out, errOut)
	}
	_, now := c.WaitLeader(t, ps, 10*time.Second)
	if now == to {
		t.Fatalf("after stormctl admin handover %s still leads", to.Name)
	}

	// An unknown address: refused, nothing changes.
	epoch, _ := c.WaitLeader(t, ps, 10*time.Second)
	unknown := testcluster.ClosedAddr(t)
	if _, err := cl.HandOver(t.Context(), unknown); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "no nimbus "+unknown) {
		t.Errorf("hand over to %s: %v, want NotFound naming it", unknown, err)
	}
	if after, _ := c.WaitLeader(t, ps, 10*time.Second); after != epoch {
		t.Errorf("a refused hand-over changed the epoch from %d to %d", epoch, after)
	}

	// A nimbus that lacks a topology's code (stopped before it was
	// submitted): refused as a target, and passed over by a leader that
	// stops.
	c.WaitQueued(t, 3, 10*time.Second)
	queue = leaderQueue(t, conn, c.Root, 3)
	leader, lacking, third := byAddr(t, ps, queue[0]), byAddr(t, ps, queue[1]), byAddr(t, ps, queue[2])
	if err := lacking.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = lacking.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	late := submitSleeper(t, cl, "handover-late", 1).GetTopologyId()
	_, err = cl.HandOver(t.Context(), lacking.Addr())
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), lacking.Addr()+" lacks the code of 1 live topologies ("+late+")") {
		t.Errorf("hand over to %s, which lacks %s: %v; want FailedPrecondition naming it", lacking.Name, late, err)
	}
	testcluster.WaitFor(t, 20*time.Second, third.Name+" holding every topology's code, as the leader sees it", func() error {
		for _, n := range clusterSummary(t, c, leader).GetNimbuses() {
			if cluster.HostPort(&clusterv1.NimbusInfo{Host: n.GetHost(), Port: n.GetPort()}) == third.Addr() && n.GetHoldsAllCode() {
				return nil
			}
		}
		return errors.New("not yet")
	})
	leaderQueue(t, conn, c.Root, 3) // it queued again once it did
	start := time.Now()
	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, now := c.WaitLeader(t, []*testcluster.Process{third}, 5*time.Second); now != third {
		t.Fatalf("after the leader stopped, %s leads; want %s, passing over %s", now.Name, third.Name, lacking.Name)
	}
	t.Logf("a stopping leader handed over to %s within %v, passing over the stopped %s", third.Name, time.Since(start).Round(time.Millisecond), lacking.Name)
	<-leader.Exited()
	resume()
	c.WaitQueued(t, 2, 20*time.Second)

	if n, failed := calls.stop(); len(failed) > 0 {
		t.Errorf("%d of %d client calls failed during the hand-overs:\n%s", len(failed), n, strings.Join(failed, "\n"))
	} else {
		t.Logf("%d client calls, none failed", n)
	}
	if now := sleepers(t, conn, id, 1, 10*time.Second, sups...); !equalPids(now, pids) {
		t.Errorf("worker pids %v after the hand-overs, were %v", now, pids)
	}
}

// leaderCalls is a client calling the leader (activate) and any nimbus
// (cluster info) back to back, recording what failed.
type leaderCalls struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	n      atomic.Int64
	mu     sync.Mutex
	failed []string
}

// callLeaderThroughout starts a leaderCalls on topology name, stopped by
// its stop (and at the test's end).
func callLeaderThroughout(t *testing.T, cl *client.Client, name string) *leaderCalls {
	ctx, cancel := context.WithCancel(t.Context())
	l := &leaderCalls{cancel: cancel}
	l.done.Go(func() {
		for ctx.Err() == nil {
			callCtx, cancelCall := context.WithTimeout(ctx, 30*time.Second)
			err := cl.ActivateTopology(callCtx, name)
			if err == nil {
				_, err = cl.GetClusterInfo(callCtx)
			}
			cancelCall()
			l.n.Add(1)
			if err != nil && ctx.Err() == nil {
				l.mu.Lock()
				l.failed = append(l.failed, fmt.Sprintf("%s: %v", time.Now().Format(time.StampMilli), err))
				l.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { l.stop() })
	return l
}

// stop ends the calls and returns how many were made and which failed.
func (l *leaderCalls) stop() (int64, []string) {
	l.cancel()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n.Load(), l.failed
}

// leaderQueue reads the leader queue under root, in order, as addresses,
// waiting until it holds n nodes.
func leaderQueue(t *testing.T, conn *zk.Conn, root string, n int) []string {
	t.Helper()
	var addrs []string
	dir := path.Join(root, "leader-lock")
	testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("%d nimbuses queued", n), func() error {
		children, _, err := conn.Children(dir)
		if err != nil {
			return err
		}
		addrs = addrs[:0]
		for _, e := range cluster.LockOrder(children) {
			data, _, err := conn.Get(path.Join(dir, e.Name))
			if err != nil {
				return err
			}
			info := new(clusterv1.NimbusInfo)
			if err := cluster.Decode(e.Name, data, info); err != nil {
				return err
			}
			addrs = append(addrs, cluster.HostPort(info))
		}
		if len(addrs) != n {
			return fmt.Errorf("queue %v", addrs)
		}
		return nil
	})
	return addrs
}

func byAddr(t *testing.T, ps []*testcluster.Process, addr string) *testcluster.Process {
	t.Helper()
	for _, p := range ps {
		if p.Addr() == addr {
			return p
		}
	}
	t.Fatalf("no process at %s", addr)
	return nil
}
