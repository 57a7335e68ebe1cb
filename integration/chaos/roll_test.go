package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// release01 is this repository at the last commit before release 0.2's
// work began: release 0.1, which TestRoll rolls from and back to.
const release01 = "211ffc6db0d6aa7674687c6e28dafe95cce6df44"

// rollSession is the roll's storm.zookeeper.session.timeout: long enough
// that a keeper waits out its supervisor's restart (the adoption bound is
// about 5 s with it; the chaos run's 4 s leaves under a second,
// docs/ARCHITECTURE.md section 17).
const rollSession = 10 * time.Second

// nimbusStopFor bounds a nimbus's exit on SIGTERM: a leader hands over
// first (its successor has 10 s to act), then every nimbus drains its
// calls (nimbus.drain.timeout.secs, 10 s).
const nimbusStopFor = 30 * time.Second

// paths are the cluster's ZooKeeper paths, under testcluster's root.
var paths = cluster.Paths{Root: testcluster.DefaultRoot}

// rollPass is one pass of a roll: every daemon stopped with SIGTERM and
// started again as itself, one at a time, from to's binaries.
type rollPass struct {
	name          string
	to            *testcluster.Binaries // nil: this tree's
	nimbusesFirst bool                  // the roll back (rollPasses)
	sameRelease   bool                  // from and to one release: no worker may stop
}

// rollPasses are TestRoll's three passes. An upgrade restarts the
// supervisors first and the leader last, once it has handed leadership to
// a nimbus already upgraded. The roll back restarts the nimbuses first: a
// nimbus of 0.1 registering lowers the cluster version to 0.1, so that each
// supervisor of 0.2 stopped afterwards stops its workers instead of leaving
// them to a 0.1 successor that cannot adopt them and would start a second
// worker beside each (docs/ARCHITECTURE.md section 18).
func rollPasses(old *testcluster.Binaries) []rollPass {
	head := version.Release + " (this tree)"
	return []rollPass{
		{name: "0.1 → " + head},
		{name: head + " → " + head, sameRelease: true},
		{name: head + " → 0.1 (roll back)", to: old, nimbusesFirst: true},
	}
}

// rollStep is one daemon's restart in a pass.
type rollStep struct {
	d       *daemon
	version string // the cluster version, as the registrations said before it
}

// TestRoll rolls a cluster under load one daemon at a time, three times
// over: from release 0.1 to this tree, from this tree to itself, and back
// to 0.1 (doc.go says what it checks).
func TestRoll(t *testing.T) {
	began := time.Now()
	old := releaseBinaries(t)
	seed := uint64(time.Now().UnixNano())
	r := newRollRun(t, settings{seed: seed}, old)
	t.Logf("roll: 3 nimbuses and 3 supervisors of release 0.1 up %s after the start; workload seed %d",
		time.Since(began).Round(time.Second), seed)
	r.canary()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	watch := newRestartWatch(r)
	var wg sync.WaitGroup
	wg.Go(func() { r.workload(ctx, rand.New(rand.NewPCG(seed, 1))) })
	wg.Go(func() { r.reader(ctx, rand.New(rand.NewPCG(seed, 2))) })
	wg.Go(func() { r.checkEvery(ctx, time.Second) })
	wg.Go(func() { watch.run(ctx) })
	results := r.rollAll(rollPasses(&old), watch)
	stop()
	wg.Wait()

	checks := time.Now()
	r.finalCheck()
	r.checkHistory()
	r.t.Logf("roll: final checks took %s", time.Since(checks).Round(time.Millisecond))
	r.reportRoll(results, time.Since(began))
	r.stopNimbuses()
}

// stopNimbuses stops the followers, then the leader, as an operator
// stopping a cluster would: stopped first, the leader would hand the lock
// to a nimbus about to stop too (one of 0.1 that wins the lock as it
// stops waits 10 s to leave the queue). The cluster stops the rest.
func (r *run) stopNimbuses() {
	leader, _, _ := r.leader()
	for _, d := range r.nimbuses {
		if d != leader {
			_ = d.proc().Stop(syscall.SIGTERM, nimbusStopFor)
		}
	}
	if leader != nil {
		_ = leader.proc().Stop(syscall.SIGTERM, nimbusStopFor)
	}
}

// releaseBinaries builds release 0.1's programs (testcluster.BuildAt) into
// a directory under os.TempDir() named after its commit, which later runs
// reuse, while this tree's are built (testcluster.Bin): two cold builds
// overlap.
func releaseBinaries(t *testing.T) testcluster.Binaries {
	start := time.Now()
	type built struct {
		b   testcluster.Binaries
		err error
	}
	old := make(chan built, 1)
	go func() {
		b, err := testcluster.BuildAt(release01, filepath.Join(os.TempDir(), "nimbus-ha-release-"+release01))
		old <- built{b, err}
	}()
	testcluster.Bin(t)
	res := <-old
	if res.err != nil {
		t.Fatal(res.err)
	}
	t.Logf("roll: release 0.1 (%.12s) and this tree built in %s", release01, time.Since(start).Round(time.Second))
	return res.b
}

// newRollRun starts what TestRoll rolls: one ZooKeeper server, 3 nimbuses
// and 3 supervisors, all from old (release 0.1's binaries), with
// rollSession. Unlike a chaos run's, nothing stands between them (no
// proxies, no PeerNet) and every nimbus has the same session.
func newRollRun(t *testing.T, set settings, old testcluster.Binaries) *run {
	r := newRunState(t, set, runDir(t, "ROLL_DIR", "roll-"))
	r.ens = testcluster.StartEnsemble(t, 1)
	c := testcluster.New(t, r.ens.ConnectString(), testcluster.WithSessionTimeout(rollSession),
		testcluster.WithDir(filepath.Join(r.dir, "cluster")))
	r.addDaemons(func(string, int) *testcluster.Cluster { return c })
	for _, d := range append(slices.Clone(r.nimbuses), r.sups...) {
		d.from = &old
	}
	r.startDaemons()
	r.dial()
	return r
}

// rollAll runs the passes in turn, once the workload runs its topologies
// (it keeps two to four besides the canary) and the cluster is healthy,
// and stops at the first pass that cannot go on.
func (r *run) rollAll(passes []rollPass, w *restartWatch) []passResult {
	start := time.Now()
	err := testcluster.Poll(healFor, func() error {
		if n := len(r.live()); n < 2 {
			return fmt.Errorf("the workload has %d topologies", n)
		}
		return nil
	})
	if err == nil {
		err = r.awaitRollHealthy()
	}
	if err != nil {
		r.violation("the cluster of release 0.1 never became healthy under the workload: %v", err)
		return nil
	}
	r.t.Logf("roll: healthy under the workload %s after it began", time.Since(start).Round(time.Millisecond))
	var out []passResult
	for _, p := range passes {
		res, err := r.rollPass(p, w)
		out = append(out, res)
		if err != nil {
			r.violation("roll %s: %v", p.name, err)
			break
		}
	}
	return out
}

// rollPass restarts every daemon once, onto p.to: the supervisors, then
// the nimbuses, or, rolling back, the other way round.
func (r *run) rollPass(p rollPass, w *restartWatch) (passResult, error) {
	r.t.Logf("roll: pass %s", p.name)
	res := passResult{name: p.name, leaderless: -1}
	calls, sdk, start := r.callTotals(), r.sdk.snapshot(), time.Now()
	phases := []func(rollPass, *restartWatch, *passResult) error{r.rollSupervisors, r.rollNimbuses}
	if p.nimbusesFirst {
		slices.Reverse(phases)
	}
	var err error
	for _, phase := range phases {
		if err = phase(p, w, &res); err != nil {
			break
		}
	}
	res.took, res.calls, res.sdk = time.Since(start), r.callTotals().minus(calls), r.sdk.snapshot().minus(sdk)
	r.t.Logf("roll: pass %s done: %s", p.name, res)
	return res, err
}

func (r *run) rollSupervisors(p rollPass, w *restartWatch, res *passResult) error {
	for _, d := range r.sups {
		if err := r.rollStep(p, d, w, res, nil); err != nil {
			return err
		}
	}
	return nil
}

// rollNimbuses restarts the followers, then the leader, once it has handed
// leadership to the follower restarted first, as docs/ARCHITECTURE.md
// section 3.7 tells operators to.
func (r *run) rollNimbuses(p rollPass, w *restartWatch, res *passResult) error {
	leader, _, _ := r.leader()
	if leader == nil {
		return errors.New("nobody leads")
	}
	var rolled []*daemon
	for _, d := range r.nimbuses {
		if d == leader {
			continue
		}
		if err := r.rollStep(p, d, w, res, nil); err != nil {
			return err
		}
		rolled = append(rolled, d)
	}
	return r.rollStep(p, leader, w, res, func() error { return r.handOverTo(rolled[0], res) })
}

// rollStep restarts d as itself from p's binaries, first calling first
// (if not nil: the leader's hand-over), and waits for the cluster to be
// healthy again (awaitRollHealthy). Meanwhile the lock queue's head may
// change once for a nimbus's restart (its hand-over) and never for a
// supervisor's. A supervisor's workers its stop ended are its pass's
// worker restarts; in a same-release pass there may be none, and every
// worker it ran under a settled assignment must run on, the same process,
// once it is back (invariant 7).
func (r *run) rollStep(p rollPass, d *daemon, w *restartWatch, res *passResult, first func() error) error {
	st := &rollStep{d: d, version: r.registeredVersion()}
	w.begin(st)
	defer w.end()
	changes := r.leaderChanges()
	defer func() { r.countLeaderChanges(st, changes(), res) }()
	start := time.Now()
	if first != nil {
		if err := first(); err != nil {
			return err
		}
	}
	sup := d.slots != nil
	var kept keptWorkers
	if sup {
		kept = r.watchWorkers(d, r.assignedSlots(d.proc().ID()), time.Now())
	}
	if err := r.stopForRoll(d); err != nil {
		r.violation("%v", err) // killed instead: the roll goes on
	}
	if sup {
		r.countStopped(st, kept, res)
	}
	d.from = p.to
	if err := r.restart(d); err != nil {
		return err
	}
	up := time.Now()
	if sup {
		if err := r.awaitBeat(d.proc().ID(), up); err != nil {
			return fmt.Errorf("%s restarted: %w", d.name, err)
		}
	}
	if err := r.awaitRollHealthy(); err != nil {
		return fmt.Errorf("after %s's restart: %w", d.name, err)
	}
	if sup && p.sameRelease {
		r.checkKept(kept, r.workersOf(d), r.assignedSlots(d.proc().ID()), "across its restart in a roll of one release")
	}
	r.t.Logf("roll: %s restarted (cluster version %s before): healthy again %s after it was up, %s after the step began",
		d.name, st.version, time.Since(up).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

// stopForRoll stops d with SIGTERM and waits for its exit; it is killed if
// it does not exit in time, which is an error.
func (r *run) stopForRoll(d *daemon) error {
	bound := stopFor
	if d.slots == nil {
		bound = nimbusStopFor
	}
	start := time.Now()
	if err := d.proc().Stop(syscall.SIGTERM, bound); err != nil {
		return fmt.Errorf("SIGTERM %s: %w", d.name, err)
	}
	r.t.Logf("roll: %s exited %s after SIGTERM", d.name, time.Since(start).Round(time.Millisecond))
	return nil
}

// countStopped counts the workers of supervisor st.d that its stop ended
// as restarts of its pass: those of kept.before no longer running. Below
// the cluster version that lets a stopping supervisor leave its workers
// it stops them all, and each counts; at or past it, one counts, and is a
// violation, only if the assignment that placed it as the signal came
// still stands: one whose assignment had gone or changed may have been
// stopped or replaced on purpose.
func (r *run) countStopped(st *rollStep, kept keptWorkers, res *passResult) {
	after, still := r.workersOf(st.d), r.assignedSlots(st.d.proc().ID())
	leaves := version.KeepWorkersOnStop.Enabled(st.version)
	stopped := 0
	for port, w := range kept.before {
		if now, ok := after[port]; ok && now.pid == w.pid {
			res.kept++
			continue
		}
		if leaves && !placedStill(kept.at, still, slotKey(w.topology, port)) {
			continue
		}
		stopped++
	}
	res.restarts += stopped
	if stopped > 0 && leaves {
		r.violation("%s stopped %d of its %d workers on SIGTERM at cluster version %s, which lets it leave them to its keepers",
			st.d.name, stopped, len(kept.before), st.version)
	}
}

// placedStill: the assignment placing slot when at was read still does
// in still (nil: unreadable, so not known to).
func placedStill(at, still map[string]written, slot string) bool {
	a, ok := at[slot]
	return ok && still != nil && still[slot] == a
}

// countLeaderChanges adds the leader changes seen during st (heads: the
// epoch of each nimbus that came to head the lock queue) to res: at most
// one, its hand-over, for a nimbus's restart; none for a supervisor's.
func (r *run) countLeaderChanges(st *rollStep, heads []int64, res *passResult) {
	res.leaderChanges += len(heads)
	allowed := 0
	if st.d.slots == nil {
		allowed = 1
		res.nimbusRestarts++
	}
	if len(heads) > allowed {
		r.violation("%s's restart changed the leader %d times (to epochs %v): at most %d", st.d.name, len(heads), heads, allowed)
	}
}

// handOverTo asks the leader, through the SDK as an operator would, to
// hand leadership to d (docs/ARCHITECTURE.md section 3.7), and waits until
// d leads. A leader of release 0.1 has no HandOver (UNIMPLEMENTED): its
// SIGTERM, on which it leaves the lock queue, hands over instead.
func (r *run) handOverTo(d *daemon, res *passResult) error {
	to := r.registeredAddr(d)
	if to == "" {
		return fmt.Errorf("%s, to take over, is not registered", d.name)
	}
	ctx, cancel := context.WithTimeout(r.t.Context(), handOverWait)
	defer cancel()
	resp, err := r.client.HandOver(ctx, to)
	switch {
	case status.Code(err) == codes.Unimplemented:
		r.t.Logf("roll: the leader has no HandOver (release 0.1): its SIGTERM hands over")
		return nil
	case err != nil:
		return fmt.Errorf("hand-over to %s: %w", d.name, err)
	}
	res.leaderless = time.Duration(resp.GetLeaderlessMs()) * time.Millisecond
	r.t.Logf("roll: handed over from %s (epoch %d) to %s (epoch %d): %s without a leader",
		resp.GetFrom(), resp.GetFromEpoch(), resp.GetTo(), resp.GetToEpoch(), res.leaderless)
	return r.awaitLeader(resp.GetTo(), resp.GetToEpoch())
}

// awaitRollHealthy waits, up to healFor each, until a leader accepts a
// write, then until every nimbus is queued for the lock (a hand-over has a
// target), the leader has written the cluster version once every daemon
// runs this tree (what a stopping supervisor reads), and every live
// topology is held by enough nimbuses and runs all its workers: the
// cluster as the roll's next step needs it.
func (r *run) awaitRollHealthy() error {
	if err := testcluster.Poll(healFor, r.flipCanary); err != nil {
		return fmt.Errorf("no leader accepted a write within %s: %w", healFor, err)
	}
	err := testcluster.Poll(healFor, func() error {
		return errors.Join(r.queued(), r.clusterVersionWritten(), r.topologiesHealthy())
	})
	if err != nil {
		return fmt.Errorf("not healthy within %s: %w", healFor, err)
	}
	return nil
}

// queued: every nimbus is in the leader-lock queue.
func (r *run) queued() error {
	names, _, err := r.conn.Children(paths.LeaderLock())
	if err != nil {
		return err
	}
	ports := map[int32]bool{}
	for _, name := range names {
		if info := new(clusterv1.NimbusInfo); r.read(paths.LeaderLock()+"/"+name, info) == nil {
			ports[info.GetPort()] = true
		}
	}
	var missing []string
	for _, d := range r.nimbuses {
		if !ports[int32(d.port)] {
			missing = append(missing, d.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not queued for the lock: %v", missing)
	}
	return nil
}

// clusterVersionWritten: once every daemon registered runs this tree's
// release, the leader has written it to /versions/cluster
// (docs/ARCHITECTURE.md section 18).
func (r *run) clusterVersionWritten() error {
	want := r.registeredVersion()
	if want != version.Release {
		return nil
	}
	v := new(clusterv1.ClusterVersion)
	if err := r.read(paths.ClusterVersion(), v); err != nil {
		return err
	}
	if v.GetRelease() != want {
		return fmt.Errorf("every daemon registered runs %s, but the cluster version written is %q", want, v.GetRelease())
	}
	return nil
}

// releaser is a registration that names its daemon's release.
type releaser interface {
	proto.Message
	GetRelease() string
}

// registeredVersion is the cluster version as the registrations say: the
// lowest release a registered nimbus or supervisor runs (one that names
// none is 0.1).
func (r *run) registeredVersion() string {
	var releases []string
	for dir, fresh := range map[string]func() releaser{
		paths.Nimbuses():    func() releaser { return new(clusterv1.NimbusInfo) },
		paths.Supervisors(): func() releaser { return new(clusterv1.SupervisorInfo) },
	} {
		names, _, _ := r.conn.Children(dir)
		for _, name := range names {
			if info := fresh(); r.read(dir+"/"+name, info) == nil {
				releases = append(releases, info.GetRelease())
			}
		}
	}
	return version.Lowest(releases...)
}

// read reads and decodes the node at path into m.
func (r *run) read(path string, m proto.Message) error {
	data, _, err := r.conn.Get(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return cluster.Decode(path, data, m)
}
