package testcluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Ensemble is a quorum of real ZooKeeper servers on loopback; Servers[i] has
// myid i+1. Tests stop and start servers to take the quorum away and back.
type Ensemble struct {
	Servers []*ZooKeeper

	t testing.TB
}

// StartEnsemble starts n servers (3 for failure tests) and waits until every
// one reports a Mode. It fails the test if ZooKeeper is not installed or the
// ensemble does not form within 30 s; the servers stop at t.Cleanup.
func StartEnsemble(t testing.TB, n int) *Ensemble {
	t.Helper()
	requireInstalled(t)
	ports := FreePorts(t, 3*n) // client, peer and election port per server
	servers := make([]string, n)
	for i := range n {
		servers[i] = fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[3*i+1], ports[3*i+2])
	}
	e := &Ensemble{t: t}
	for i := range n {
		e.Servers = append(e.Servers, newZooKeeper(t, fmt.Sprintf("zk%d", i+1), i+1, ports[3*i], servers))
	}
	e.StartAll()
	return e
}

// StartAll starts every stopped server, then waits until all report a Mode.
// Use it to bring back an ensemble whose majority is down: there a single
// ZooKeeper.Start cannot return, as its server waits for a quorum.
func (e *Ensemble) StartAll() {
	e.t.Helper()
	for _, z := range e.Servers {
		if !z.running() {
			if err := z.launch(); err != nil {
				e.t.Fatalf("testcluster: start %s: %v", z.name, err)
			}
		}
	}
	for _, z := range e.Servers {
		if err := z.waitReady(); err != nil {
			e.t.Fatalf("testcluster: %v", err)
		}
	}
}

// Addrs returns the servers' client addresses, stopped ones included.
func (e *Ensemble) Addrs() []string {
	addrs := make([]string, len(e.Servers))
	for i, z := range e.Servers {
		addrs[i] = z.Addr()
	}
	return addrs
}

// ConnectString returns the client addresses joined by commas.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Addrs(), ",") }

// WaitQuorum waits up to 30 s until a majority of the servers report a Mode,
// and fails the test otherwise.
func (e *Ensemble) WaitQuorum(t testing.TB) {
	t.Helper()
	WaitFor(t, startTimeout, "a ZooKeeper quorum", func() error {
		var errs []error
		for _, z := range e.Servers {
			if _, err := z.Mode(); err != nil {
				errs = append(errs, err)
			}
		}
		if serving := len(e.Servers) - len(errs); serving <= len(e.Servers)/2 {
			return fmt.Errorf("%d of %d servers serving: %w", serving, len(e.Servers), errors.Join(errs...))
		}
		return nil
	})
}
