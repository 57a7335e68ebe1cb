package testcluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// leaderTimeout bounds one GetLeader call of AgreedLeader.
const leaderTimeout = 2 * time.Second

// AgreedLeader asks every process in ps for the leader, one after the
// other (up to 2 s each), and returns it when all agree and it is one of
// ps; otherwise it returns an error saying who disagrees.
func (c *Cluster) AgreedLeader(ps []*Process) (*nimbusv1.NimbusSummary, *Process, error) {
	var first *nimbusv1.NimbusSummary
	for _, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), leaderTimeout)
		resp, err := c.API(p).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		l := resp.GetLeader()
		if first == nil {
			first = l
			continue
		}
		if l.GetHost() != first.GetHost() || l.GetPort() != first.GetPort() || l.GetEpoch() != first.GetEpoch() {
			return nil, nil, fmt.Errorf("%s sees %s:%d epoch %d, others %s:%d epoch %d", p.Name,
				l.GetHost(), l.GetPort(), l.GetEpoch(), first.GetHost(), first.GetPort(), first.GetEpoch())
		}
	}
	if first == nil {
		return nil, nil, errors.New("no process to ask")
	}
	addr := first.GetHost() + ":" + strconv.Itoa(int(first.GetPort()))
	for _, p := range ps {
		if p.Addr() == addr {
			return first, p, nil
		}
	}
	return nil, nil, fmt.Errorf("leader %s is not among the live processes", addr)
}

// WaitLeader polls until every process in ps reports the same leader, one
// of ps, acting as leader (its term started: leader health SERVING), and
// returns its epoch and process. It fails the test if that has not
// happened within timeout, and must be called from the test's goroutine.
func (c *Cluster) WaitLeader(t testing.TB, ps []*Process, timeout time.Duration) (epoch int64, leader *Process) {
	t.Helper()
	WaitFor(t, timeout, "one leader all agree on", func() error {
		s, p, err := c.AgreedLeader(ps)
		if err != nil {
			return err
		}
		if st, err := c.Health(p, nimbusv1.LeaderHealthService); err != nil || st != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("%s named leader but not acting yet (%v, %v)", p.Name, st, err)
		}
		epoch, leader = s.GetEpoch(), p
		return nil
	})
	return epoch, leader
}

// WaitQueued polls, through a ZooKeeper session of its own, until exactly
// n nimbuses are registered (<root>/nimbuses) and queued for leadership
// (<root>/leader-lock): no stale node of a dead session left, nobody stuck
// outside. It fails the test if that has not happened within timeout, and
// must be called from the test's goroutine.
func (c *Cluster) WaitQueued(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	conn, err := dialZooKeeper(strings.Split(c.ZooKeeper, ","), queueSessionTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	WaitFor(t, timeout, fmt.Sprintf("%d nimbuses registered and queued", n), func() error {
		locks, _, err := conn.Children(path.Join(c.Root, "leader-lock"))
		if err != nil {
			return err
		}
		regs, _, err := conn.Children(path.Join(c.Root, "nimbuses"))
		if err != nil {
			return err
		}
		if len(locks) != n || len(regs) != n {
			return fmt.Errorf("%d lock nodes and %d registrations", len(locks), len(regs))
		}
		return nil
	})
}

// queueSessionTimeout is the session timeout of WaitQueued's client.
const queueSessionTimeout = 5 * time.Second

// Without returns ps without those in drop, in the same order.
func Without(ps []*Process, drop ...*Process) []*Process {
	var out []*Process
	for _, p := range ps {
		if !slices.Contains(drop, p) {
			out = append(out, p)
		}
	}
	return out
}
