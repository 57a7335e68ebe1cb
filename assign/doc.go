// Package assign owns the scheduling decision of docs/ARCHITECTURE.md
// section 6: which worker slot of which supervisor runs each executor of
// each topology. It is pure logic, like Storm's EvenScheduler: Schedule maps
// the topologies, the live supervisors and the current assignments to new
// assignments, and does no I/O. Reading supervisors and assignments from
// ZooKeeper, deciding which supervisors are alive and writing the result
// back belong to the leader.
package assign
