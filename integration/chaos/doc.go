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
// follower's code, restarts a ZooKeeper server, SIGKILLs a supervisor and
// cuts a nimbus off from ZooKeeper. The other nimbuses and the supervisors
// have a 4 s session. A checker looks at the cluster every second and
// once more after the faults stop and the cluster has healed.
//
// Every client operation is recorded with its call and return times (one
// monotonic clock): the workload's submits, kills, rebalances, activations
// and deactivations through the SDK, a reader's GetClusterInfo and
// GetTopologyInfo, and the recovery probe's and the stale writes' flips of
// the canary. At the end Porcupine checks that history against a model of
// the topology API, one partition per topology (model_test.go: an
// acknowledged write applied once between call and answer, a kill never
// undone, status changes in order, the leader's own REBALANCING-to-previous
// and KILLED-to-removed steps at any moment). A write whose outcome is
// unknown (Unavailable, DeadlineExceeded, "outcome unknown", the run's end)
// may apply, or not, at any moment after its call; a definite refusal
// (NotFound, AlreadyExists, FailedPrecondition, InvalidArgument, a
// submit's Aborted) is an answer the model must explain. Reads are answered
// from caches (docs/ARCHITECTURE.md section 11), so the check lets a read
// return any status the topology has had up to then, never one it has not
// had yet; a second check with linearizable reads only reports whether reads
// lagged. A history Porcupine finds illegal is a violation; one it cannot
// decide within 30 s fails the run too, because an unchecked history proves
// nothing and a check that slow means the history outgrew the checker. The
// visualization is saved as linearizability.html in the run's directory
// (CHAOS_DIR), or, when the check does not pass, in a kept temporary one.
//
// `make test` runs 60 s; `make chaos` runs CHAOS_DURATION (5m by
// default). A failing run prints its seed: CHAOS_SEED=<seed> replays the
// same faults in the same order (their timing against the cluster's own
// timing can differ).
package chaos
