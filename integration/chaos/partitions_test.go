package chaos_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// wipeAllName is the fault CHAOS_WIPE_ALL=1 adds: recovering from it needs
// the nimbuses to fetch code back from supervisors.
const wipeAllName = "wipe-all-nimbus-code"

// cutPeersName is the fault that cuts a nimbus from the other nimbuses
// (testcluster.PeerNet), where the machine allows it.
const cutPeersName = "cut-nimbus-from-nimbuses"

// cutNimbusFromPeers cuts one nimbus from the other two for 2 to 8 s,
// while it keeps ZooKeeper and its clients: both ways, or only its calls
// to them, or only theirs to it (drawn from the seed). Cut from the
// others, a leader can no longer be fetched from nor watched by their
// health streams, and a follower can fetch from no other nimbus.
func (r *run) cutNimbusFromPeers() {
	i := r.rng.IntN(len(r.nimbuses))
	way := r.rng.IntN(3)
	hold := time.Duration(2000+r.rng.IntN(6000)) * time.Millisecond
	what := []string{"both ways", "its calls to them only", "their calls to it only"}[way]
	r.t.Logf("chaos: %s cut from the other nimbuses (%s) for %s", r.nimbuses[i].name, what, hold)
	for j := range r.nimbuses {
		if j == i {
			continue
		}
		var err error
		if way != 2 {
			err = r.peers.Cut(i, j)
		}
		if way != 1 && err == nil {
			err = r.peers.Cut(j, i)
		}
		if err != nil {
			r.t.Errorf("chaos: %v", err)
		}
	}
	r.hold(hold)
	r.peers.Restore()
}

// cutProxies cuts ps: closes their connections (a reset) or, when silent,
// black-holes both directions (a partition nobody is told of: the bytes
// are held back until restoreProxies, then arrive in order).
func cutProxies(ps []*testcluster.Proxy, silent bool) {
	for _, p := range ps {
		if silent {
			p.Drop()
		} else {
			p.Cut()
		}
	}
}

func restoreProxies(ps []*testcluster.Proxy) {
	for _, p := range ps {
		p.Restore()
	}
}

func cutKind(silent bool) string {
	if silent {
		return "black-holed"
	}
	return "reset"
}

// cutNimbusFromPart cuts the proxied nimbus off one or two of the three
// ZooKeeper servers, for 1 to 7 s; it still reaches the others, and may
// move its session there.
func (r *run) cutNimbusFromPart() {
	n := 1 + r.rng.IntN(2)
	which := r.rng.Perm(len(r.proxies))[:n]
	silent := r.rng.IntN(2) == 0
	hold := time.Duration(1000+r.rng.IntN(6000)) * time.Millisecond
	var cut []*testcluster.Proxy
	var names []string
	for _, i := range which {
		cut = append(cut, r.proxies[i])
		names = append(names, r.ens.Servers[i].Addr())
	}
	r.t.Logf("chaos: %s cut (%s) from ZooKeeper %s for %s", r.nimbuses[2].name, cutKind(silent), strings.Join(names, ", "), hold)
	cutProxies(cut, silent)
	r.hold(hold)
	restoreProxies(cut)
}

// cutNimbusOneWay black-holes one direction between the proxied nimbus and
// every ZooKeeper server, for longer than the session. With its requests
// held, the servers hear nothing and expire its session. With the
// answers held, the servers still hear it (its pings, its reconnection
// attempts) while it hears nothing: it must stop acting as the leader
// although ZooKeeper has not yet given its lock away.
func (r *run) cutNimbusOneWay() {
	dir := testcluster.Direction(r.rng.IntN(2))
	r.t.Logf("chaos: %s's traffic %s ZooKeeper black-holed for %s", r.nimbuses[2].name, dir, pauseFor)
	for _, p := range r.proxies {
		p.Drop(dir)
	}
	r.hold(pauseFor)
	restoreProxies(r.proxies)
}

// cutSupervisor cuts the proxied supervisor off ZooKeeper for longer than
// its session. Its workers must keep running meanwhile (invariant 7): a
// worker it ran when cut off still runs, the same process, when the cut
// ends, if its slot was given to its topology by an assignment that had
// stood unchanged for a while (settled) and still did at the cut. (A
// supervisor cut off acts on the last assignments it read; those it had
// not read yet cannot be held against it.)
func (r *run) cutSupervisor() {
	d := r.sups[2]
	silent := r.rng.IntN(2) == 0
	earlier := r.assignedSlots(d.proc().ID())
	start := time.Now()
	cutProxies(r.supProxies, silent)
	kept := r.watchWorkers(d, earlier, start)
	r.t.Logf("chaos: %s cut (%s) from ZooKeeper for %s, running %d workers", d.name, cutKind(silent), pauseFor, len(kept.before))
	r.hold(pauseFor)
	after := r.workersOf(d)
	restoreProxies(r.supProxies)
	// Cut off, it read no assignment since: each one it had read holds.
	r.checkKept(kept, after, nil, "while cut off ZooKeeper")
}

// heldBySupervisors is the set of live topologies whose code is on some
// supervisor's disk.
func (r *run) heldBySupervisors() map[string]bool {
	held := map[string]bool{}
	for id := range r.expectedLive() {
		for _, d := range r.sups {
			if _, err := os.Stat(filepath.Join(d.local, "supervisor", "code", id, "meta.pb")); err == nil {
				held[id] = true
				break
			}
		}
	}
	return held
}

// onNoSupervisor says which live topologies held does not name.
func (r *run) onNoSupervisor(held map[string]bool) error {
	var errs []error
	for id := range r.expectedLive() {
		if !held[id] {
			errs = append(errs, fmt.Errorf("%s is on no supervisor's disk", id))
		}
	}
	return errors.Join(errs...)
}

// wipeAllCode deletes the stored code of every nimbus at the same moment,
// leader included. Only the supervisors then hold the code: the nimbuses
// must fetch it back from them. The fault ends once every live topology's
// code is back on disk at minReplicas nimbuses and registered as their
// replica, which must take less than 60 s; how long it took is the run's
// code recovery time. Off unless CHAOS_WIPE_ALL=1.
func (r *run) wipeAllCode() {
	// Recovery needs a copy somewhere: a topology acknowledged a moment
	// ago that no supervisor has fetched yet would be lost for real (and
	// marked LOST after the grace, 5.9), not recovered. The fault waits
	// until the supervisors hold every live topology, or is skipped.
	if err := testcluster.Poll(30*time.Second, func() error { return r.onNoSupervisor(r.heldBySupervisors()) }); err != nil {
		r.t.Logf("chaos: every nimbus's code not wiped: %v", err)
		return
	}
	held := r.heldBySupervisors()
	var dirs []string
	for _, d := range r.nimbuses {
		dir := filepath.Join(d.local, "nimbus", "code")
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, dir := range dirs {
		wg.Go(func() { os.RemoveAll(dir) })
	}
	wg.Wait()
	r.t.Logf("chaos: wiped %d code dirs of %d nimbuses", len(dirs), len(r.nimbuses))
	// One acknowledged since the look is on no supervisor: its code is
	// gone for good, and it is expected LOST, not recovered.
	if lost := r.onNoSupervisor(held); lost != nil {
		r.mu.Lock()
		for id := range r.expectedLiveLocked() {
			if !held[id] {
				r.lostByFault[id] = true
			}
		}
		r.mu.Unlock()
		r.t.Logf("chaos: wiped code no supervisor held: %v", lost)
	}
	err := testcluster.Poll(60*time.Second, func() error {
		var errs []error
		for id := range r.expectedLive() {
			held := 0
			for _, d := range r.nimbuses {
				if _, err := os.Stat(filepath.Join(d.local, "nimbus", "code", id)); err == nil {
					held++
				}
			}
			if held < minReplicas {
				errs = append(errs, fmt.Errorf("%s: on the disk of %d nimbuses, want %d", id, held, minReplicas))
			}
			errs = append(errs, r.replicated(id))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		r.violation("every nimbus's code wiped: not recovered within 60 s: %v", err)
		return
	}
	took := time.Since(start)
	r.t.Logf("chaos: every nimbus's code wiped: recovered in %s", took.Round(time.Millisecond))
	r.mu.Lock()
	r.codeRecoveries = append(r.codeRecoveries, took)
	r.mu.Unlock()
}
