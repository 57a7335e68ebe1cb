// Package depose ends the term of a leader that is certainly dead, so the
// lock queue moves on at once instead of waiting out the dead leader's
// ZooKeeper session (storm.zookeeper.session.timeout, 20 s by default).
//
// Every follower keeps a long-lived stream open to the leader (gRPC
// health Watch on the leader's service). When the stream breaks, the
// follower probes the leader's address (Probe). Only positive evidence of
// death deposes: the leader's host refusing the connection for a while,
// which it does within a millisecond when the process is gone (a panic, an
// OOM kill, SIGKILL) but the host is up, and then the leader not answering
// a challenge through ZooKeeper (a node the follower creates and a live
// leader deletes at once, Deposer.answer): a firewall resetting
// connections, or a follower's stale name for the leader, refuses for a
// leader that runs, but cannot answer for it. A timeout, an unreachable
// host, a partition, a stopped process (SIGSTOP: the kernel still accepts
// on its port) or anything else deposes nothing: the session's expiry
// decides. A follower deposes one leader at most once per session timeout.
//
// Deposing deletes exactly the dead term's lock node, by path and version
// (a new term is a new sequential node, never touched). One follower's
// evidence suffices: a false deposition costs one needless leader change
// and nothing else, because every leader write is a multi that first
// checks the leader's own lock node (leader.Term.Multi): once the node is
// gone, the deposed leader can change nothing, whatever it still believes,
// and it ends its term on the node's deletion watch.
package depose
