// Package cluster is the typed ZooKeeper state of a Nimbus-HA cluster
// (DESIGN.md section 3): the session every part of a process shares, the
// paths under storm.zookeeper.root, the protobuf payloads stored there, and
// caches that ZooKeeper watches keep current so that reads never cost a
// ZooKeeper round trip.
//
// Writes that only the leader may make are fenced by package leader; this
// package supplies the typed operations they carry.
package cluster
