package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// pausedSession is Storm's default session timeout: go-zookeeper declares a
// silent server dead after 2/3 of it (about 13 s), far past the deadlines
// below, so only the request's own deadline can end a call in time.
const pausedSession = 20 * time.Second

// abandonedCalls reads nimbus_zookeeper_abandoned_calls from p's metrics.
func abandonedCalls(p *testcluster.Process) (int, error) {
	text, err := p.Metrics()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, "nimbus_zookeeper_abandoned_calls "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("%s exports no nimbus_zookeeper_abandoned_calls", p.Name)
}

// With the only ZooKeeper server stopped (SIGSTOP) while the nimbus's
// session still looks alive, a kill with a 2 s deadline answers UNAVAILABLE
// before that deadline, not when go-zookeeper gives up 13 s later; the call
// is counted as abandoned until the server is resumed, and the kill is
// applied once or not at all. The REST API's kill answers 503 within its
// action timeout. Then the nimbus serves kills again.
func TestKillWithZooKeeperPausedFailsUnavailableWithinDeadline(t *testing.T) {
	// 1. One server, a nimbus with Storm's 20 s session, a topology.
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(pausedSession))
	n := c.StartNimbuses(t, 1)[0]
	c.WaitLeader(t, []*testcluster.Process{n}, 20*time.Second)
	cl := newClient(t, c, n)
	id := submit(t, cl, "paused", randomBytes(t, 1000)).GetTopologyId()
	conn := testcluster.ConnectZooKeeper(t, pausedSession, z.Addr())
	path := cluster.Paths{Root: c.Root}.Storm(id)
	_, before, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := abandonedCalls(n); err != nil || got != 0 {
		t.Fatalf("abandoned calls before the pause: %d (%v), want 0", got, err)
	}

	// 2. Paused: UNAVAILABLE within the deadline, the call counted.
	z.Pause()
	t.Cleanup(z.Resume) // before the server's own cleanup stops it
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.API(n).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "paused"})
	took := time.Since(start)
	t.Logf("kill with ZooKeeper paused: %v after %v", err, took)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("kill with ZooKeeper paused: %v; want Unavailable", err)
	}
	if took > 2*time.Second+300*time.Millisecond {
		t.Fatalf("kill with ZooKeeper paused answered after %v; want within its 2 s deadline (+300 ms)", took)
	}
	if got, err := abandonedCalls(n); err != nil || got < 1 {
		t.Fatalf("abandoned calls while paused: %d (%v), want at least 1", got, err)
	}

	// The REST API's kill goes to the leader through the SDK, which
	// retries UNAVAILABLE until the action's timeout (15 s): 503 by then,
	// never a handler stuck past it.
	start = time.Now()
	code := restKill(t, c, n, id)
	took = time.Since(start)
	t.Logf("REST kill with ZooKeeper paused: %d after %v", code, took)
	if code != http.StatusServiceUnavailable || took > restActionTimeout+time.Second {
		t.Fatalf("REST kill with ZooKeeper paused: %d after %v; want 503 within %v", code, took, restActionTimeout)
	}

	// 3. Resumed: the abandoned call returns, and the kill applied once or
	// not at all.
	z.Resume()
	testcluster.WaitFor(t, 20*time.Second, "abandoned calls back to 0", func() error {
		got, err := abandonedCalls(n)
		if err == nil && got != 0 {
			err = fmt.Errorf("%d abandoned calls", got)
		}
		return err
	})
	var after *clusterv1.StormBase
	testcluster.WaitFor(t, 20*time.Second, "a read of "+path, func() error {
		data, stat, err := conn.Get(path)
		if err != nil {
			return err
		}
		base := new(clusterv1.StormBase)
		if err := cluster.Decode(path, data, base); err != nil {
			return err
		}
		switch {
		case base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE && stat.Version == before.Version:
		case base.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED && stat.Version == before.Version+1:
		default:
			t.Fatalf("after the paused kill %s is %v at version %d (was %d): not applied once or not at all",
				id, base.GetStatus(), stat.Version, before.Version)
		}
		after = base
		return nil
	})
	t.Logf("the paused kill left %s %v", id, after.GetStatus())

	// 4. The nimbus still leads and kills: ZooKeeper answers again.
	c.WaitLeader(t, []*testcluster.Process{n}, 20*time.Second)
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := cl.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "paused"}); err != nil {
		t.Fatalf("kill after the resume: %v", err)
	}
	data, _, err := conn.Get(path)
	base := new(clusterv1.StormBase)
	if err == nil {
		err = cluster.Decode(path, data, base)
	}
	if err != nil || base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED {
		t.Fatalf("after the kill %s is %v (%v), want KILLED", id, base.GetStatus(), err)
	}
}

// restActionTimeout is the REST API's bound on a forwarded action
// (stormapi's defaultActionTimeout).
const restActionTimeout = 15 * time.Second

// restKill POSTs a kill of topology id to p's REST API and returns the
// HTTP status; it fails the test if no answer comes well past
// restActionTimeout.
func restKill(t *testing.T, c *testcluster.Cluster, p *testcluster.Process, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), restActionTimeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.UIURL()+"/api/v1/topology/"+id+"/kill/0", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.UIClient(t).Do(req)
	if err != nil {
		t.Fatalf("REST kill: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	t.Logf("REST kill answered %d: %s", resp.StatusCode, body)
	return resp.StatusCode
}
