// Package chaos runs a whole cluster under random faults and fails on any
// broken invariant (docs/ARCHITECTURE.md section 2).
//
// A 3-server ZooKeeper ensemble, 3 nimbuses and 3 supervisors run while a
// client keeps submitting, killing and rebalancing topologies and a fault
// injector, driven by a seeded random source, SIGKILLs the leader (and
// starts it again after a while, or at once on its port and local dir),
// SIGKILLs the leader while it is nimbus-1, whose session is Storm's
// default 20 s, so that only deposition replaces it in time, deletes the live leader's lock node by hand (a
// false deposition), pauses a nimbus for longer than its session, wipes a
// follower's code, restarts a ZooKeeper server, SIGKILLs a supervisor,
// stops a supervisor with SIGTERM and starts it again at once on its local
// dir and slots, as an upgrade would (restart-supervisor, workers_test.go:
// every worker it ran under an assignment that had stood for 3 s must run
// on, the same process, once the new one is up, adopted from its keeper;
// invariant 7; the supervisors skip the race detector's second of sleep at
// exit, which no release build has and which would outlast their keepers'
// window), and cuts a nimbus off from ZooKeeper. The other nimbuses and
// the supervisors have a 4 s session. A checker looks at the cluster
// every second and once more after the faults stop and the cluster has
// healed.
//
// Two faults move or threaten leadership while the leader runs
// (leadership_test.go). hand-over asks the leader through the SDK
// (client.Client.HandOver) to hand leadership to the next nimbus able to
// lead or, half the time, to a live follower named at random: a refusal
// (FAILED_PRECONDITION or NOT_FOUND: the nimbus named is not queued or
// lacks code, as right after a submit) is counted as one, any other error
// logged; a hand-over done must leave its target leading at the epoch it
// answered, and its leaderless_ms goes into the summary (p50, p99). The
// workload's calls meanwhile are checked with every other.
// reset-leader-connections has the firewall answer every connection to the
// leader's gRPC port with a reset for 3 to 8 s (testcluster.RejectPort:
// iptables REJECT --reject-with tcp-reset on loopback, and ss -K), so that
// its followers see what a dead leader looks like; from the rule until 2 s
// after it the head of the leader queue, watched in ZooKeeper, may change
// at most once (a follower challenges the leader through ZooKeeper before
// deposing it, docs/ARCHITECTURE.md section 3.5). It needs root, iptables
// and ss; without them the run says so and leaves it out.
//
// Partitions (partitions_test.go) go through testcluster.Proxy: nimbus-3
// and supervisor-3 reach each ZooKeeper server through a proxy of their
// own. A cut either resets the connections or black-holes them (they stay
// open and nobody is told; the bytes are held back, not lost, and arrive in
// order when the cut ends), drawn from the seed. The faults: nimbus-3 cut
// from one or two of the three servers for 1 to 7 s (the others still serve
// it); nimbus-3's traffic to, or from, every server black-holed for longer
// than the session (with the answers held the servers still hear it while
// it hears nothing); supervisor-3 cut off ZooKeeper for longer than its
// session, during which every worker it ran under an assignment that had
// stood for 3 s must keep running, the same process (invariant 7). With
// CHAOS_WIPE_ALL=1, the code of every nimbus is also wiped at the same
// moment (wipe-all-nimbus-code), once every live topology is on some
// supervisor's disk (a topology acknowledged a moment ago and not fetched
// by any supervisor yet would be lost for real: the fault waits up to 30 s
// for that, or is skipped); the fault ends once every live topology's code
// is back on the disk of two nimbuses and registered, fetched from the
// supervisors, which must take less than 60 s. One acknowledged between the
// look and the wipe has no copy left: it is expected LOST
// (nimbus.code.lost.grace.secs is 15 s in such a run), not recovered. It is
// off by default.
//
// A nimbus is cut from the other two nimbuses for 2 to 8 s, both ways, or
// only its calls to them, or only theirs to it, while it keeps ZooKeeper
// and its clients (testcluster.PeerNet): each nimbus advertises a host name
// and listens on every interface, and runs in a mount namespace of its own
// whose /etc/hosts resolves each peer to a loopback address kept for the
// pair (127.x.i.j); a cut is a blackhole route to that address. The fault
// needs root, unshare and ip; without them the run says so and leaves it
// out. The test's own clients resolve every nimbus to 127.0.0.1.
//
// After each fault the injector flips the canary until a leader accepts
// the write: the time from the fault's end to then is the run's recovery
// time (p50, p99), beside the time from losing a leader to a new one's
// first write.
//
// Every client operation is recorded with its call and return times (one
// monotonic clock): the workload's submits, kills, rebalances, activations
// and deactivations through the SDK, a reader's GetClusterInfo and
// GetTopologyInfo, and the recovery probe's and the stale writes' flips of
// the canary. At the end Porcupine checks that history against a model of
// the topology API, one partition per topology (repeated reads left out
// where they cannot change the answer: collapser; model_test.go: an
// acknowledged write applied once between call and answer, a kill never
// undone, status changes in order, the leader's own REBALANCING-to-previous
// and KILLED-to-removed steps at any moment). A write whose outcome is
// unknown (Unavailable, DeadlineExceeded, "outcome unknown", the run's end)
// may apply, or not, at any moment after its call; a definite refusal
// (NotFound, AlreadyExists, FailedPrecondition, InvalidArgument, a
// submit's Aborted) is an answer the model must explain. The reader asks
// for linearizable reads (docs/ARCHITECTURE.md section 11), so a second
// check has every read return the status of its moment: an acknowledged
// submit visible to every later read. The first check lets a read return
// any status the topology has had up to then, as plain reads from caches
// may. A history Porcupine finds illegal in either is a violation; one it cannot
// decide within 30 s fails the run too, because an unchecked history proves
// nothing and a check that slow means the history outgrew the checker. The
// visualization is saved as linearizability.html in the run's directory
// (CHAOS_DIR), or, when the check does not pass, in a kept temporary one.
//
// A blob workload (blobload_test.go) creates, updates, deletes and reads
// three blobs through the SDK meanwhile, every write with a value no other
// has; reads go to the leader. Porcupine checks that history apart, against
// a register per key (blobmodel_test.go): a read returns the value of its
// moment, so an acknowledged update is visible to every later read and no
// update is undone.
//
// `make test` runs 60 s; `make chaos` runs CHAOS_DURATION (5m by
// default). A failing run prints its seed: CHAOS_SEED=<seed> replays the
// same faults in the same order (their timing against the cluster's own
// timing can differ). CHAOS_FAULT_EVERY=2s draws the gap between faults
// from 1 to 3 s (default 1 to 4 s); CHAOS_FAULTS=1000 runs until that
// many faults were injected instead of for CHAOS_DURATION;
// CHAOS_FAULT_KINDS=a,b injects only those kinds (the names the log
// prints). Every run ends with a summary (logged, and written as
// summary.md into the run's directory under CHAOS_DIR): the faults by
// kind, the operations Porcupine checked, the recovery times, the
// hand-overs (by outcome, and their time without a leader), the leader
// changes under each reset rule, and each daemon's RSS (/proc) and
// goroutines (go_goroutines) before the faults and after the heal, ready
// for bench/RESULTS.md.
//
// TestRoll (roll_test.go) is the roll, proven under load: one ZooKeeper
// server, 3 nimbuses and 3 supervisors of release 0.1 (this repository at
// release01, built by testcluster.BuildAt into a directory under the
// system's temporary one named after the commit, which later runs reuse),
// a 10 s session (a keeper waits out its supervisor's restart), and the
// workload, the reader and the checker above running throughout, while
// every daemon is stopped with SIGTERM and started again as itself, one at
// a time, three times over: 0.1 to this tree, this tree to itself, and back
// to 0.1. An upgrade restarts the supervisors, then the followers, then
// the leader, once it has handed leadership (client.Client.HandOver) to the
// follower restarted first (a 0.1 leader has no HandOver: its SIGTERM hands
// over); the roll back restarts the nimbuses first, so that the cluster
// version is 0.1 before any supervisor of 0.2 stops (docs/ARCHITECTURE.md
// section 18). After each restart the cluster must be healthy again within
// healFor: a leader accepting a write, every nimbus queued for the lock,
// the cluster version written once every daemon runs this tree, every live
// topology replicated and running all its workers. It fails on: any failed
// client call (a write refused for the topology's status is an answer, not
// a failure; SDK retries and redirects are counted, not failed); more than
// one change of the lock queue's head during a nimbus's restart, or any
// during a supervisor's; a worker that stopped while the assignment
// placing it stood, unless its own supervisor was being restarted at a
// cluster version below 0.2 (restartWatch), which in the same-release pass
// means any; two workers on a slot; the history's check; the final check.
// Each pass reports its time, client calls, SDK retries and redirects,
// worker restarts, leader changes and the hand-over's leaderless_ms (as
// roll.md in the run's directory under ROLL_DIR; `make bench-roll`).
package chaos
