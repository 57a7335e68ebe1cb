package chaos_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// stamp is one epoch-stamped write seen in ZooKeeper.
type stamp struct {
	path  string
	mzxid int64
	epoch int64
}

// goroutineCount is what one nimbus process reported.
type goroutineCount struct{ first, most int }

// checkEvery checks the invariants that hold at every moment, until ctx
// ends.
func (r *run) checkEvery(ctx context.Context, every time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		r.checkAcknowledged()
		r.checkEpochs()
		r.checkSlots()
		r.checkGoroutines()
	}
}

// finalCheck, once the faults stopped and the cluster healed: everything
// checkEvery checks, and every live topology held by enough nimbuses with
// its workers running.
func (r *run) finalCheck() {
	r.checkAcknowledged()
	r.checkEpochs()
	r.checkSlots()
	r.checkGoroutines()
	if err := testcluster.Poll(healFor, r.topologiesHealthy); err != nil {
		r.violation("%s after the faults stopped: %v", healFor, err)
	}
}

// topologiesHealthy: every live topology is held by enough nimbuses and
// runs all its workers.
func (r *run) topologiesHealthy() error {
	var errs []error
	for id := range r.expectedLive() {
		errs = append(errs, r.replicated(id), r.running(id))
	}
	return errors.Join(errs...)
}

// expectedLive: acknowledged, no kill asked, and not left without a copy
// anywhere by a wipe of every nimbus (lostByFault).
func (r *run) expectedLive() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expectedLiveLocked()
}

// expectedLiveLocked is expectedLive with r.mu held.
func (r *run) expectedLiveLocked() map[string]bool {
	out := map[string]bool{}
	for id := range r.acked {
		if !r.killAsked[id] && !r.lostByFault[id] {
			out[id] = true
		}
	}
	return out
}

// checkAcknowledged: every acknowledged topology no kill was asked for is
// in /storms (invariants 1 and 4).
func (r *run) checkAcknowledged() {
	want := r.expectedLive()
	have, _, err := r.conn.Children("/storm/storms")
	if err != nil {
		return // ZooKeeper is the fault now; the next round looks again
	}
	for id := range want {
		if slices.Contains(have, id) {
			continue
		}
		r.mu.Lock()
		killed := r.killAsked[id] // asked since the snapshot
		r.mu.Unlock()
		if !killed {
			r.violationOnce("lost "+id, "acknowledged topology %s is not in /storms", id)
		}
	}
}

// checkEpochs: no leader write carries an epoch older than one already
// committed before it (invariant 3). Every write seen so far, in commit
// (zxid) order, must carry non-decreasing epochs.
func (r *run) checkEpochs() {
	for _, dir := range []string{"/storm/storms", "/storm/assignments", "/storm/code-distributor"} {
		ids, _, err := r.conn.Children(dir)
		if err != nil {
			return
		}
		for _, id := range ids {
			data, st, err := r.conn.Get(dir + "/" + id)
			if err != nil || len(data) == 0 {
				continue
			}
			var m interface {
				proto.Message
				GetEpoch() int64
			}
			switch dir {
			case "/storm/storms":
				m = new(clusterv1.StormBase)
			case "/storm/assignments":
				m = new(clusterv1.Assignment)
			default:
				m = new(clusterv1.CodeDistribution)
			}
			if err := cluster.Decode(id, data, m); err != nil {
				r.violationOnce("garbage "+dir+id, "%s/%s holds what no daemon wrote: %v", dir, id, err)
				continue
			}
			s := stamp{path: dir + "/" + id, mzxid: st.Mzxid, epoch: m.GetEpoch()}
			r.mu.Lock()
			r.stamps[fmt.Sprintf("%s@%d", s.path, s.mzxid)] = s
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	all := make([]stamp, 0, len(r.stamps))
	for _, s := range r.stamps {
		all = append(all, s)
	}
	r.mu.Unlock()
	slices.SortFunc(all, func(a, b stamp) int { return int(a.mzxid - b.mzxid) })
	var newest stamp
	for _, s := range all {
		if s.epoch < newest.epoch {
			r.violationOnce(fmt.Sprintf("epoch %s@%d", s.path, s.mzxid),
				"%s written at zxid %#x with epoch %d, after %s was written at zxid %#x with epoch %d",
				s.path, s.mzxid, s.epoch, newest.path, newest.mzxid, newest.epoch)
		}
		if s.epoch > newest.epoch {
			newest = s
		}
	}
}

// checkSlots: no worker port runs two workers. It looks at the processes
// themselves, not at what the supervisors report.
func (r *run) checkSlots() {
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	byPort := map[string][]string{}
	for _, f := range pids {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) < 3 || !strings.HasPrefix(args[0], r.dir) || filepath.Base(args[0]) != "artifact" {
			continue
		}
		if i := slices.Index(args, "--port"); i >= 0 && i+1 < len(args) {
			pid := filepath.Base(filepath.Dir(f))
			byPort[args[i+1]] = append(byPort[args[i+1]], pid)
		}
	}
	for port, ps := range byPort {
		if len(ps) > 1 {
			r.violationOnce("slot "+port+strings.Join(ps, ","), "port %s runs %d workers: pids %v", port, len(ps), ps)
		}
	}
}

// checkGoroutines: a daemon's goroutine count stays within a bound of
// what it started with, whatever the faults did to it.
func (r *run) checkGoroutines() {
	for _, d := range append(slices.Clone(r.nimbuses), r.sups...) {
		p := d.proc()
		n, err := goroutines(p)
		if err != nil {
			continue // paused, cut off or dead: the fault, not a leak
		}
		r.mu.Lock()
		c := r.goroutines[p]
		if c == nil {
			c = &goroutineCount{first: n}
			r.goroutines[p] = c
		}
		c.most = max(c.most, n)
		bound := 3*c.first + 200
		r.mu.Unlock()
		if n > bound {
			r.violationOnce("goroutines "+p.Name, "%s runs %d goroutines, started with %d", p.Name, n, c.first)
		}
	}
}

// goroutines reads a daemon's go_goroutines gauge from its metrics page.
func goroutines(p *testcluster.Process) (int, error) {
	page, err := p.Metrics()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s: no go_goroutines on its metrics page", p.Name)
}

// replicated: at least minReplicas nimbuses hold the code /storms names.
func (r *run) replicated(id string) error {
	base, err := r.stormBase(id)
	if err != nil {
		return err
	}
	hosts, _, err := r.conn.Children("/storm/code-distributor/" + id)
	if err != nil {
		return fmt.Errorf("%s replicas: %w", id, err)
	}
	held := 0
	for _, h := range hosts {
		data, _, err := r.conn.Get("/storm/code-distributor/" + id + "/" + h)
		info := new(clusterv1.ReplicaInfo)
		if err == nil && cluster.Decode(h, data, info) == nil && bytes.Equal(info.GetCodeMetaDigest(), base.GetCodeMetaDigest()) {
			held++
		}
	}
	if held < minReplicas {
		return fmt.Errorf("%s: %d nimbuses hold its code (of %v), want %d", id, held, hosts, minReplicas)
	}
	return nil
}

// running: as many workers of id answer on their ports as /storms says.
func (r *run) running(id string) error {
	base, err := r.stormBase(id)
	if err != nil {
		return err
	}
	sups, _, err := r.conn.Children("/storm/supervisors")
	if err != nil {
		return err
	}
	n := 0
	for _, s := range sups {
		data, _, err := r.conn.Get("/storm/supervisors/" + s)
		info := new(clusterv1.SupervisorInfo)
		if err != nil || cluster.Decode(s, data, info) != nil {
			continue
		}
		for _, w := range info.GetWorkers() {
			if w.GetTopologyId() == id && w.GetState() == "running" && askWorker(w.GetPort(), id) {
				n++
			}
		}
	}
	if want := int(base.GetNumWorkers()); n != want {
		return fmt.Errorf("%s (%s): %d workers running, want %d", id, base.GetStatus(), n, want)
	}
	return nil
}

func (r *run) stormBase(id string) (*clusterv1.StormBase, error) {
	data, _, err := r.conn.Get("/storm/storms/" + id)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%s is not in /storms", id)
	}
	if err != nil {
		return nil, err
	}
	base := new(clusterv1.StormBase)
	return base, cluster.Decode(id, data, base)
}

// askWorker: the example worker on port says it runs topology id.
func askWorker(port int32, id string) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, 4096)).ReadString('\n')
	return err == nil && strings.Contains(line, id)
}

func (r *run) violationOnce(key, format string, args ...any) {
	r.mu.Lock()
	seen := r.reported[key]
	r.reported[key] = true
	r.mu.Unlock()
	if !seen {
		r.violation(format, args...)
	}
}

// report prints what the run did, as a row for bench/RESULTS.md.
func (r *run) report(seed uint64, duration time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]string, 0, len(r.faults))
	total := 0
	for k, n := range r.faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	slices.Sort(kinds)
	p50, p99, most99 := percentiles(r.recoveries)
	h50, h99, hmax := percentiles(r.healed)
	o50, o99, omax := percentiles(r.leaderless)
	most := 0
	for _, c := range r.goroutines {
		most = max(most, c.most)
	}
	r.t.Logf("chaos: seed %d, %s: %d faults (%s); %d submits, %d acknowledged; client ok %v, failed %v, refused for the topology's status %v; SDK %s; "+
		"recovery after losing the leader (%d): p50 %s, p99 %s, max %s; after a fault's end (%d): p50 %s, p99 %s, max %s; "+
		"hand-overs %v, without a leader (%d): p50 %s, p99 %s, max %s; leader changes under a reset rule on the leader's port: %s; "+
		"writes sent to deposed leaders: %d, rejected %d (%d fenced, the others refused before a write); "+
		"most goroutines in a daemon: %d; history: %d operations checked (%d of unknown outcome), %s in %s, "+
		"with linearizable reads %s; violations: %d",
		seed, duration, total, strings.Join(kinds, ", "), r.submitted, r.ops["submit"], r.ops, r.opErrors, r.refused, r.sdk.snapshot(),
		len(r.recoveries), p50, p99, most99, len(r.healed), h50, h99, hmax,
		r.handOvers, len(r.leaderless), o50, o99, omax, resetChanges(r.resetChanges), r.staleSent, r.staleRejected, r.staleFenced, most,
		r.checked, r.checkedUnknown, r.checkResult, r.checkTook.Round(time.Millisecond), r.strictResult, len(r.violations))
}
