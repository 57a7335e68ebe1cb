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
// `make test` runs 60 s; `make chaos` runs CHAOS_DURATION (5m by
// default). A failing run prints its seed: CHAOS_SEED=<seed> replays the
// same faults in the same order (their timing against the cluster's own
// timing can differ).
package chaos
