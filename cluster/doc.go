// Package cluster is the typed ZooKeeper state of a Nimbus-HA cluster
// (docs/ARCHITECTURE.md section 3): the session every part of a process
// shares, the paths under storm.zookeeper.root, the protobuf payloads
// stored there, and every way in or out of ZooKeeper but the election's:
//
//   - caches that watches keep current (DirCache, ReplicaCache), so that
//     most reads cost no round trip;
//   - Reader, one method per kind of node for what must be read afresh:
//     Session.Read for loops, Session.ReadFor bounded by a request's
//     deadline (Call, CallWrite, which also say what go-zookeeper's
//     transport errors mean: apierr.ErrUnavailable or ErrOutcomeUnknown);
//   - the writes only the leader may make, built as typed operations (Ops:
//     a StormBase, an assignment, a distribution created, set, checked or
//     deleted) and applied by package leader behind its fence
//     (Term.Multi); and the few made outside the fence (write.go: an
//     unfenced Multi guarded by versions, a supervisor's heartbeat, a
//     deposition, the BitTorrent swarms);
//   - the ACL of every node the daemons create (ACL), and ephemeral nodes
//     kept through session changes (EphemeralNode);
//   - how the session reaches ZooKeeper: over TLS on every connection when
//     SessionConfig.TLS is set, with no plaintext path (TLS).
//
// Nothing outside this package and package leader imports go-zookeeper.
package cluster
