// Package conformance is the test suite every code distributor backend
// must pass: the same scenarios against real nodes (stores served by the
// real CodeService over gRPC on loopback, a real ZooKeeper), whatever moves
// the bytes.
package conformance
