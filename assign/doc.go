// Package assign owns the scheduling decision of docs/ARCHITECTURE.md
// section 6: which worker slot of which supervisor runs each executor of
// each topology. It is pure logic, like Storm's EvenScheduler: Schedule maps
// the topologies, the live supervisors and the current assignments to new
// assignments, and does no I/O. A Placer is the same decision kept between
// calls, so that a leader that schedules after every change pays for the
// change, not for the cluster; Schedule is a Placer used once. Reading supervisors and assignments from
// ZooKeeper, deciding which supervisors are alive and writing the result
// back belong to the leader.
package assign
