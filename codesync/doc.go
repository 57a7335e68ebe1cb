// Package codesync keeps a nimbus's local store holding the code of every
// topology the cluster wants (docs/ARCHITECTURE.md invariant 6).
//
// It watches /code-distributor and /storms, fetches missing code the moment
// a distribution appears (a watch on the replica list retries as soon as a
// replica registers, so nothing waits on a poll), registers this nimbus as a
// replica only after a verified install, and deletes code the cluster no
// longer wants. A copy reported corrupt to the store (by the CodeService
// serving it, or a seed) is verified again and, found so, fetched again;
// code deleted behind the store's back is noticed within a second. A
// sweep every nimbus.code.sync.freq.secs re-verifies what is held, as a
// safety net.
//
// It also gates leadership: the Syncer keeps the election queued while this
// nimbus holds every topology in /storms and withdrawn while it does not,
// and Gate.Eligible, the election's gate, checks afresh when the nimbus wins
// the lock.
//
// Followers lack a new topology's code for a moment after each
// submission; that is logged at INFO. Code still missing after
// topology.max.replication.wait.time.sec is stuck, and warned of once per
// spell (catchup.go).
package codesync
