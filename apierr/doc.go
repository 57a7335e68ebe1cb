// Package apierr is what a request's failure means, as sentinel errors in a
// leaf that every layer may import: the errors the API's handlers end a
// request with (ErrNotFound, ErrNoLeader, *NotLeaderError, ...), and the
// meanings a lower package gives its own sentinels with Sentinel, so that
// the edge maps them without knowing the package (cluster.ErrUnavailable
// means ErrUnavailable; codedistributor.ErrNotHeld means ErrNotFound).
// Package apistatus turns them into gRPC and HTTP codes; nothing here
// knows a code.
//
// The convention the mapping relies on: code says what happened by
// wrapping one sentinel with %w, and describes the cause with %v, as text.
// The mapping decides by errors.Is and errors.As, so a cause wrapped with
// %w could change the answer: a ZooKeeper "outcome unknown" (the write may
// have happened) inside a submission that was surely not committed (safe to
// retry) must not turn the answer into Unknown. NotCommitted does it that
// way. Where no sentinel says what happened, the cause itself is wrapped
// with %w, so that its own meaning decides: a commit whose answer was lost
// (nimbus's service.commit) answers Unknown because ZooKeeper's error says
// the write may have been applied.
package apierr
