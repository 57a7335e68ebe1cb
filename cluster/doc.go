// Package cluster is the typed ZooKeeper state of a Nimbus-HA cluster
// (docs/ARCHITECTURE.md section 3): the session every part of a process
// shares, the paths under storm.zookeeper.root, the protobuf payloads
// stored there, and caches that ZooKeeper watches keep current so that
// reads never cost a ZooKeeper round trip.
//
// Writes that only the leader may make are built here as typed operations
// (Ops: a StormBase, an assignment, a distribution created, set, checked or
// deleted) and applied by package leader behind its fence (Term.Multi).
// The ACL of every node the daemons create is chosen here too (ACL).
package cluster
