// Package view is the nimbus's read model: the caches that ZooKeeper
// watches keep current (/nimbuses, /leader-lock, /storms,
// /code-distributor, /supervisors, /assignments, /lost), and the answers
// built from them that every read serves, the gRPC reads and Storm's REST
// API alike (docs/ARCHITECTURE.md section 11).
//
//   - view.go: the caches, and the shared answers (LeaderInfo, ClusterInfo,
//     Failover), each built at most once per change of what it reads and
//     handed to the server's codec to encode once (New's share);
//     TopologyInfo, built per request; who holds which code (holdings).
//   - workers.go: worker truth, the assignments joined with the
//     supervisors' heartbeats by slot and topology; MissingSlots, the rule
//     the leader's shortfall applies too.
//   - clusterpart.go: a part of the cluster (some topologies or
//     supervisors, a page) picked from the shared whole through an index.
//
// No read waits for ZooKeeper: a reader that must see a write it made
// waits for the cache with the DirCache's Await methods.
package view
