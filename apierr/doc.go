// Package apierr is what a request's failure means on the wire: the errors
// the API's handlers end a request with (ErrNotFound, *NotLeaderError, a
// *validate.Error, ...) and ToStatus, the one place where an error becomes a
// gRPC status code, with the details clients act on (the field of a bad
// request; the leader's address when a follower is asked).
//
// The convention, which ToStatus relies on: code says what happened by
// wrapping one sentinel with %w, and describes the cause with %v, as text.
// ToStatus decides by errors.Is and errors.As, so a cause wrapped with %w
// could change the answer: a ZooKeeper "connection closed" (Unknown: the
// write may have happened) inside a submission that was surely not committed
// (Aborted: safe to retry) must not turn the answer into Unknown.
// NotCommitted does it that way. Where no sentinel says what happened, the
// cause itself is wrapped with %w, so that its own meaning decides: a commit
// whose answer was lost (nimbus's service.commit) answers Unknown because
// ZooKeeper's error says the write may have been applied.
package apierr
