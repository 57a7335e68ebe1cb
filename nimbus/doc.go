// Package nimbus is the nimbus daemon: it wires the ZooKeeper session, the
// caches of package cluster, the election of package leader and the gRPC
// services together, and owns their lifecycle (Start, ReadyNotify, Err,
// Close), so tests run the same daemon in-process that cmd/nimbus runs.
//
// Handlers only validate, call domain code and map errors; errors.go is the
// one place where domain errors become gRPC status codes.
package nimbus
