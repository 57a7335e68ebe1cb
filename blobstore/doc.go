// Package blobstore owns blobs: files that topologies share (Storm's
// blobstore), kept on top of the code distributors rather than beside
// them (docs/ARCHITECTURE.md section 24).
//
// A blob is a key, a content whose version is its SHA-256 (never a time),
// a replication factor and Storm's ACL. Its current version is one bundle
// of one file ("blob"), stored, replicated and verified by digest exactly
// as topology code is, through the same Store, Fetcher and Distributor of
// package codedistributor with codedistributor.KindBlob. ZooKeeper holds
// /blobstore/<key> (a BlobMeta, written by the leader, fenced) and under it
// one ReplicaInfo per nimbus holding a version.
//
// What this package owns:
//   - the ACL's meaning (acl.go): who a blob's ACL grants what;
//   - a blob's bundle and its summary (bundle.go);
//   - the Syncer (syncer.go): on every nimbus, hold the current version of
//     every blob, verified, and register as its replica; fetch from
//     nimbuses, then from supervisors; never block leadership;
//   - the Localizer (localizer.go): on a supervisor, place the blobs a
//     worker's topology.blobstore.map names in its directory before it
//     starts, switch them atomically on an update, and keep the unused
//     ones in a bounded LRU cache.
package blobstore
