package chaos_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// resetLeaderName is the fault that has the firewall reset every
// connection to the leader's port (testcluster.RejectPort), where the
// machine allows it.
const resetLeaderName = "reset-leader-connections"

// resetAfter is how long after a reset rule goes leader changes still
// count against it: a deposition it set off may land a moment later.
const resetAfter = 2 * time.Second

// handOverWait bounds a hand-over's call (the leader waits up to 10 s for
// its successor to act) and the wait for its target to head the queue.
const handOverWait = 30 * time.Second

// handOver asks the leader, through the SDK as an operator would, to hand
// leadership over: to the next nimbus able to lead, or, half the time, to
// a live follower named at random. A refusal (FAILED_PRECONDITION: the
// named nimbus is not queued or lacks a topology's code, as right after a
// submit; NOT_FOUND: it is not registered) is an answer, counted as such;
// any other error is logged, not a violation, since ZooKeeper may be slow.
// A hand-over done must leave its target leading at the epoch it answered,
// and its time without a leader (leaderless_ms) goes into the summary. The
// workload's calls meanwhile are checked with every other (Porcupine).
func (r *run) handOver() {
	named, pick := r.rng.IntN(2) == 0, r.rng.IntN(len(r.nimbuses)) // drawn first: the seed, not the cluster, decides
	to := ""
	if named {
		to = r.followerAddr(pick)
	}
	failed := r.failedCalls()
	ctx, cancel := context.WithTimeout(r.t.Context(), handOverWait)
	defer cancel()
	resp, err := r.client.HandOver(ctx, to)
	if code := status.Code(err); code == codes.FailedPrecondition || code == codes.NotFound {
		r.count(r.handOvers, "refused")
		r.t.Logf("chaos: hand-over to %q refused: %v", to, err)
		return
	}
	if err != nil {
		r.count(r.handOvers, "failed")
		r.t.Logf("chaos: hand-over to %q: %v", to, err)
		return
	}
	if resp.GetFrom() == resp.GetTo() {
		r.count(r.handOvers, "to the leader itself")
		return
	}
	r.count(r.handOvers, "done")
	leaderless := time.Duration(resp.GetLeaderlessMs()) * time.Millisecond
	r.mu.Lock()
	r.leaderless = append(r.leaderless, leaderless)
	r.mu.Unlock()
	r.t.Logf("chaos: handed over from %s (epoch %d) to %s (epoch %d): %s without a leader; %d workload calls failed meanwhile",
		resp.GetFrom(), resp.GetFromEpoch(), resp.GetTo(), resp.GetToEpoch(), leaderless, r.failedCalls()-failed)
	if err := r.awaitLeader(resp.GetTo(), resp.GetToEpoch()); err != nil {
		r.violation("a hand-over answered that %s leads at epoch %d, but it does not: %v", resp.GetTo(), resp.GetToEpoch(), err)
	}
}

// followerAddr is the registered address (host:port, as the nimbus
// advertises itself) of a live nimbus that does not lead: the pick-th,
// counting on past the leader and the dead; "" if there is none (a
// hand-over then goes to the next nimbus able to lead).
func (r *run) followerAddr(pick int) string {
	leader, _, _ := r.leader()
	for i := range r.nimbuses {
		d := r.nimbuses[(pick+i)%len(r.nimbuses)]
		if d == leader || !d.proc().Running() {
			continue
		}
		if addr := r.registeredAddr(d); addr != "" {
			return addr
		}
	}
	return ""
}

// registeredAddr is nimbus d's registered address (host:port, as it
// advertises itself): what a hand-over names; "" while it is not
// registered.
func (r *run) registeredAddr(d *daemon) string {
	registered, _, err := r.conn.Children("/storm/nimbuses")
	if err != nil {
		return ""
	}
	if j := slices.IndexFunc(registered, func(addr string) bool { return portOf(addr) == d.port }); j >= 0 {
		return registered[j]
	}
	return ""
}

// portOf is the port of a host:port; 0 if it has none.
func portOf(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(port)
	return n
}

// awaitLeader waits until the nimbus at addr heads the leader queue at
// epoch.
func (r *run) awaitLeader(addr string, epoch int64) error {
	return testcluster.Poll(handOverWait, func() error {
		d, now, _ := r.leader()
		if d == nil {
			return fmt.Errorf("nobody leads")
		}
		if d.port != portOf(addr) || now != epoch {
			return fmt.Errorf("%s leads at epoch %d", d.name, now)
		}
		return nil
	})
}

// failedCalls is how many of the workload's calls failed so far.
func (r *run) failedCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.opErrors {
		n += c
	}
	return n
}

// resetLeaderConnections has the firewall answer every connection to the
// leader's gRPC port with a reset for 3 to 8 s, while the leader runs and
// keeps its session: its followers' health streams break and their probes
// are refused, as for a dead leader. Deposition must not take it for one
// (docs/ARCHITECTURE.md section 3.5): the leader answers their challenges
// through ZooKeeper, and each follower deposes a given leader at most once
// per session timeout, so at most one leader change may come of it,
// counted from the rule until resetAfter after it is lifted; more is a
// violation.
func (r *run) resetLeaderConnections() {
	hold := time.Duration(3000+r.rng.IntN(5000)) * time.Millisecond // drawn first: the seed, not the cluster, decides
	d, epoch, _ := r.leader()
	if d == nil {
		r.t.Logf("chaos: no leader to reset the connections of")
		return
	}
	challenged := r.challenges()
	changes := r.leaderChanges()
	r.t.Logf("chaos: connections to %s (leading at epoch %d), port %d, reset for %s", d.name, epoch, d.port, hold)
	restore := testcluster.RejectPort(r.t, d.port)
	r.hold(hold)
	restore()
	r.hold(resetAfter) // a deposition under way as the rule goes counts too
	epochs := changes()
	r.mu.Lock()
	r.resetChanges = append(r.resetChanges, len(epochs))
	r.mu.Unlock()
	r.t.Logf("chaos: %s's port reset for %s: %d leader changes (to epochs %v); challenges to leaders meanwhile: %s",
		d.name, hold, len(epochs), epochs, diffChallenges(challenged, r.challenges()))
	if len(epochs) > 1 {
		r.violation("%s, leading at epoch %d behind a rule resetting connections to its port for %s, was followed by %d leaders (epochs %v) by %s after it: at most 1",
			d.name, epoch, hold, len(epochs), epochs, resetAfter)
	}
}

// leaderChanges watches the head of the leader-lock queue from now until
// the function it returns is called, which returns the epoch of every
// nimbus that came to head it meanwhile: each change of the head's node
// name counts once (epochs jump when nimbuses queue again). The first look
// is taken before it returns, so that a change right after counts. It sets
// a children watch again at each change, so that two changes a moment
// apart (deposition takes at least the 50 ms refusal and the 250 ms
// challenge) are both seen, where a poll could miss one between two looks.
func (r *run) leaderChanges() (stop func() []int64) {
	ctx, cancel := context.WithCancel(r.t.Context())
	done := make(chan struct{})
	var epochs []int64
	last, _, changed, err := r.lockHead()
	go func() {
		defer close(done)
		for {
			var retry <-chan time.Time
			if err != nil {
				retry = time.After(testcluster.PollInterval) // ZooKeeper is slow: look again in a moment
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-retry:
			}
			var head string
			var epoch int64
			if head, epoch, changed, err = r.lockHead(); err != nil || head == "" {
				continue
			}
			if last != "" && head != last {
				epochs = append(epochs, epoch)
			}
			last = head
		}
	}()
	return func() []int64 {
		cancel()
		<-done
		return epochs
	}
}

// lockHead reads the leader-lock queue's head, its node's name ("" while
// nobody is queued) and epoch, and watches the queue for its next change.
func (r *run) lockHead() (name string, epoch int64, changed <-chan zk.Event, err error) {
	names, _, changed, err := r.conn.ChildrenW(lockDir)
	if err != nil {
		return "", 0, nil, err
	}
	if q := cluster.LockOrder(names); len(q) > 0 {
		return q[0].Name, q[0].Epoch(), changed, nil
	}
	return "", 0, changed, nil
}

// challenges sums nimbus_deposition_challenges_total over the nimbuses
// that answer, by outcome: whether a reset rule reached the followers at
// all, and what their challenges found.
func (r *run) challenges() map[string]float64 {
	const series = "nimbus_deposition_challenges_total{"
	out := map[string]float64{}
	for _, d := range r.nimbuses {
		page, err := d.proc().Metrics()
		if err != nil {
			continue // dead or paused: it challenges nobody
		}
		for _, line := range strings.Split(page, "\n") {
			labels, ok := strings.CutPrefix(line, series)
			if !ok {
				continue
			}
			_, outcome, _ := strings.Cut(labels, `outcome="`)
			outcome, _, _ = strings.Cut(outcome, `"`)
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err == nil {
				out[outcome] += v
			}
		}
	}
	return out
}

// diffChallenges says how many challenges of each outcome were made
// between two sums.
func diffChallenges(before, after map[string]float64) string {
	var parts []string
	for _, outcome := range []string{"answered", "unanswered", "recent"} {
		parts = append(parts, fmt.Sprintf("%s %v", outcome, after[outcome]-before[outcome]))
	}
	return strings.Join(parts, ", ")
}
