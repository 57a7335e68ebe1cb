// Package leader runs this nimbus's part in the leader election of
// docs/ARCHITECTURE.md section 3 and fences what a leader writes
// (invariant 3).
//
// The election is ZooKeeper's lock recipe: each candidate creates a
// protected ephemeral-sequential node under /leader-lock, the lowest node
// leads, and every other candidate watches only its predecessor. Leadership
// is a Term: a context that is cancelled the moment leadership may have
// ended (the session disconnected or expired, the node vanished, or the
// nimbus left the queue), never a boolean that goes stale. A Term's writes
// go through Term.Multi, whose first operation checks that the term's lock
// node still exists; a deposed leader that wakes from a long pause cannot
// change anything, because its node went with its session.
//
// Who leads, as every process sees it, is read from a cache in package
// cluster; this package only takes part.
package leader
