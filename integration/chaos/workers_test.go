package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// settled is how long an assignment must have stood unchanged before a
// fault for the supervisor to be held to it: long enough for the
// supervisor to have read it and acted on it.
const settled = 3 * time.Second

// stopFor bounds a supervisor's exit on SIGTERM: it only detaches from its
// keepers and leaves its session to expire, so it exits well within its
// keepers' adoption bound (under 2 s with the run's 4 s session).
const stopFor = 10 * time.Second

// restartSupervisor stops a supervisor with SIGTERM, as an upgrade would,
// and starts it again at once on the same local dir and slots. The new
// process adopts the workers from their keepers (docs/ARCHITECTURE.md
// section 17): every worker it ran under a settled assignment must run on,
// the same process, once the new one is up (invariant 7).
func (r *run) restartSupervisor() {
	live := slices.DeleteFunc(slices.Clone(r.sups), func(d *daemon) bool { return !d.proc().Running() })
	if len(live) == 0 {
		r.t.Logf("chaos: no live supervisor to restart")
		return
	}
	d := live[r.rng.IntN(len(live))]
	p := d.proc()
	kept := r.watchWorkers(d, r.assignedSlots(p.ID()), time.Now())
	if err := p.Stop(syscall.SIGTERM, stopFor); err != nil {
		r.t.Errorf("chaos: SIGTERM %s: %v", d.name, err)
	}
	stopped := time.Since(kept.start)
	r.restart(d)
	up := time.Now()
	if err := r.awaitBeat(p.ID(), up); err != nil {
		r.t.Logf("chaos: %s restarted: %v", d.name, err) // the check below looks anyway
	}
	after := r.workersOf(d)
	still := r.assignedSlots(p.ID())
	if still == nil {
		r.t.Logf("chaos: %s restarted: assignments unreadable, its workers not checked", d.name)
		return
	}
	n := r.checkKept(kept, after, still, "across its restart (SIGTERM)")
	r.t.Logf("chaos: %s stopped with SIGTERM in %s, up again %s after the signal; %d of its %d workers held to their pids",
		d.name, stopped.Round(time.Millisecond), up.Sub(kept.start).Round(time.Millisecond), n, len(kept.before))
}

// awaitBeat waits for a heartbeat of supervisor id written after since:
// a supervisor that has beaten since it was up has acted on the
// assignments it read at its start (its ready line comes once it has read
// them), so what it would wrongly stop is stopped by then.
func (r *run) awaitBeat(id string, since time.Time) error {
	return testcluster.Poll(10*time.Second, func() error {
		data, _, err := r.conn.Get("/storm/supervisors/" + id)
		if err != nil {
			return err
		}
		info := new(clusterv1.SupervisorInfo)
		if err := cluster.Decode(id, data, info); err != nil {
			return err
		}
		if beat := time.UnixMilli(info.GetLastHeartbeatUnixMs()); !beat.After(since) {
			return fmt.Errorf("no heartbeat since %s (last %s)", since.Format("15:04:05.000"), beat.Format("15:04:05.000"))
		}
		return nil
	})
}

// keptWorkers is what a fault that must not stop a supervisor's workers
// (invariant 7) saw as it began.
type keptWorkers struct {
	d       *daemon
	start   time.Time
	earlier map[string]written // the assignments a moment before the fault
	at      map[string]written // the assignments as it began
	before  map[int]worker     // d's workers as it began
}

// watchWorkers notes d's workers, and the assignments placing them, as a
// fault that must not stop them begins at start; earlier are the
// assignments read a moment before.
func (r *run) watchWorkers(d *daemon, earlier map[string]written, start time.Time) keptWorkers {
	k := keptWorkers{d: d, start: start, earlier: earlier}
	k.before = r.workersOf(d)
	k.at = r.assignedSlots(d.proc().ID())
	return k
}

// checkKept: each worker of k.before whose slot was given to its topology
// by an assignment that had stood unchanged for settled and still did as
// the fault began runs on in after, the same process; a violation
// otherwise, saying it stopped during (how the fault is named in it).
// Still, unless nil, are the assignments read after the fault: a worker
// whose assignment changed since the fault began is left out, since a
// supervisor that read the change may have stopped it on purpose. It
// returns how many workers it held to their pids.
func (r *run) checkKept(k keptWorkers, after map[int]worker, still map[string]written, during string) int {
	held := 0
	for port, w := range k.before {
		slot := slotKey(w.topology, port)
		a, ok := k.at[slot]
		if !ok || k.earlier[slot] != a || k.start.Sub(a.mtime) < settled {
			continue // its assignment had just changed, or the checker could not read it
		}
		if still != nil && still[slot] != a {
			continue // changed since: it may be gone on purpose
		}
		held++
		now, ok := after[port]
		if ok && now.pid == w.pid {
			continue
		}
		instead := "none runs there now"
		if ok {
			instead = fmt.Sprintf("pid %d of %s runs there now", now.pid, now.topology)
		}
		r.violation("%s stopped its worker of %s on port %d (pid %d) %s: %s; the assignment placing it there was written at %s",
			k.d.name, w.topology, port, w.pid, during, instead, a.mtime.Format("15:04:05.000"))
	}
	return held
}

// worker is one worker process, as /proc shows it.
type worker struct {
	pid      int
	topology string
}

// workersOf returns the workers running on d's slots, by port.
func (r *run) workersOf(d *daemon) map[int]worker {
	out := map[int]worker{}
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range pids {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) < 3 || !strings.HasPrefix(args[0], d.local+string(filepath.Separator)) || filepath.Base(args[0]) != "artifact" {
			continue
		}
		i := slices.Index(args, "--port")
		if i < 0 || i+1 >= len(args) {
			continue
		}
		port, err1 := strconv.Atoi(args[i+1])
		pid, err2 := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err1 == nil && err2 == nil && slices.Contains(d.slots, port) {
			out[port] = worker{pid: pid, topology: filepath.Base(filepath.Dir(args[0]))}
		}
	}
	return out
}

// written identifies one write of an assignment node.
type written struct {
	mzxid int64
	mtime time.Time
}

// slotKey names a slot given to a topology, as assignedSlots does.
func slotKey(topology string, port int) string { return fmt.Sprintf("%s:%d", topology, port) }

// assignedSlots returns, by "topology:port" (slotKey), every slot the assignments in
// ZooKeeper give the supervisor id, with the write of its assignment; nil
// if they cannot be read.
func (r *run) assignedSlots(id string) map[string]written {
	ids, _, err := r.conn.Children("/storm/assignments")
	if err != nil {
		return nil
	}
	out := map[string]written{}
	for _, topo := range ids {
		data, st, err := r.conn.Get("/storm/assignments/" + topo)
		if err != nil {
			continue
		}
		a := new(clusterv1.Assignment)
		if cluster.Decode(topo, data, a) != nil {
			continue
		}
		for _, e := range a.GetExecutors() {
			if s := e.GetSlot(); s.GetSupervisorId() == id {
				out[slotKey(topo, int(s.GetPort()))] = written{st.Mzxid, time.UnixMilli(st.Mtime)}
			}
		}
	}
	return out
}
