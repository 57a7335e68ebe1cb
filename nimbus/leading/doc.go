// Package leading is the leader's work in each term it holds
// (docs/ARCHITECTURE.md section 10.1): the duties a nimbus does only while
// it leads, each under the term's context, each write fenced by the term.
//
// Duties.Run waits for each term the election gives, and runs it: the term
// starts its duties, runs rounds until it ends, and stops them in reverse
// order. A duty (duty) does its part of every round and says when it next
// needs one; its start and its stop sit side by side, so what a term
// exports ends with it. In round order:
//
//   - heartbeats: reads the supervisors' heartbeats every
//     heartbeatReadEvery (the cache watches membership only);
//   - timedActions (timed.go): removes killed topologies and applies
//     rebalances once their wait is over;
//   - cleanup (cleanup.go): removes what submissions that never committed
//     left, and code stored in the backend that nothing refers to;
//   - scheduling (schedule.go, observe.go, shortfall.go): places the
//     topologies' executors on live slots and writes what changed;
//   - standbys (standby.go): exports how many nimbuses could take over,
//     and warns when none could for long.
//
// A duty reads and writes only what Config hands it, and what its own
// struct lists: nothing else of the nimbus reaches it.
package leading
