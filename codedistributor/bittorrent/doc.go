// Package bittorrent is the code distributor for big artifacts and many
// nodes: every nimbus and supervisor that holds a topology's code seeds it
// to the others, so the leader's upload bandwidth stops being the limit
// (docs/ARCHITECTURE.md section 5).
//
// Upload makes a private torrent of the bundle; the .torrent is the
// backend meta, so a meta verified by its digest also vouches for every
// piece hash. The swarm is closed: no DHT, no peer exchange, no public
// trackers. Peers find each other in ZooKeeper, where each node registers
// its torrent address under /bittorrent/<topology-id> while it seeds or
// fetches that topology. An optional tracker URL (bittorrent.tracker.url)
// goes into the metainfo, and the nodes announce to it, so ordinary
// BitTorrent clients can join.
//
// A download writes into the fetcher's temporary directory, checks every
// piece as it arrives and the bundle's SHA-256s at the end, and gives up
// when nobody else is left in the swarm or nothing arrives for a minute.
// Seeding follows the node's Store: what it holds, verified, is seeded
// from where it lies, read-only; what it drops, or what changes behind its
// back, stops being seeded.
//
// Blobs travel the same way from the node's blob store (Params.Blobs),
// in swarms of their own under /bittorrent-blobs/<key>, so a blob whose
// key is a topology's id never meets that topology's code. A blob's
// versions share its swarm, each a torrent of its own; a node seeds the
// version its blob store holds.
package bittorrent
