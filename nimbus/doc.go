// Package nimbus is the nimbus daemon. It wires the parts together (the
// ZooKeeper session and the caches of package cluster, the election of
// package leader, codesync, the code distributor, the gRPC services) and
// owns their lifecycle: Start, ReadyNotify, Err, Close. cmd/nimbus is a
// thin main around it, and the tests of this package run the same Server
// in-process against a real ZooKeeper (inprocess_test.go).
//
// Beyond the wiring it holds the NimbusService handlers, which validate
// (package validate), call the domain code and end with an error of package
// apierr, the one place errors become gRPC codes; the view, which answers
// reads from the caches; the leader's duties for each term (leading.go);
// the scheduling round (schedule.go); and the topology lifecycle
// (lifecycle.go maps every status change to its code).
package nimbus
