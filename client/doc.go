// Package client is the Go SDK of Nimbus-HA: it speaks nimbus.v1 to a set
// of nimbuses and hides which one leads.
//
// It owns three things: the gRPC connections (created lazily, one per
// address, closed by Close); the routing of each RPC (reads go to any
// nimbus, leader-only RPCs go to the leader, found through GetLeader and
// NOT_LEADER redirects); and the retry policy, which retries only what is
// safe to retry.
//
// Reads (GetLeader, GetClusterInfo, GetTopologyInfo) try the known
// addresses in order, starting from the one that last answered, and move on
// when a nimbus is unreachable, Unavailable or too slow. When none answers
// they return a *NoSeedAnsweredError (errors.Is ErrNoSeedAnswered).
//
// Leader-only RPCs (KillTopology, ActivateTopology, DeactivateTopology,
// RebalanceTopology) act on a topology by name and are idempotent, so they
// follow NOT_LEADER redirects and retry Unavailable answers with jittered
// exponential backoff until the retry budget (WithRetry) is spent; then
// they return a *NoLeaderError (errors.Is ErrNoLeader).
//
// SubmitTopology is not idempotent and is retried far more narrowly: see
// its documentation. CreateBlob and UpdateBlob upload the same way (one
// upload path, upload.go); ReadBlob streams a blob from the leader and
// checks it against its SHA-256; ListBlobs reads from any nimbus; the
// other blob calls go to the leader (blobs.go).
//
// Every other failure is the server's gRPC status, returned as is: use
// status.Code to inspect it (InvalidArgument, NotFound, AlreadyExists).
// The typed errors of this package wrap the last status they saw, so
// status.Code works on them too.
package client
