// Package codedistributor moves topology code to the nimbuses and the
// supervisors that need it, and keeps every copy verified
// (docs/ARCHITECTURE.md section 5, invariant 5).
//
// A bundle is a directory of files (the artifact and the topology's spec)
// described by a CodeMeta: each file's size and SHA-256. The meta's own
// SHA-256, its digest, is stored in ZooKeeper, so a meta fetched from any
// node, and then every file it lists, can be verified.
//
// Store is the local, verified copy every node holds. Distributor is the
// pluggable transport, chosen by storm.codedistributor.class from backends
// that Register themselves (localfs, in its own package, is the default).
// Fetch puts the two together: meta from any replica, files through the
// distributor, verified, installed atomically.
package codedistributor
