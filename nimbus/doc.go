// Package nimbus is the nimbus daemon. It wires the parts together and owns
// their lifecycle (Start, ReadyNotify, Err, Close): the ZooKeeper session
// (package cluster), the read model (nimbus/view), the election (package
// leader) and the leader's duties in each term (nimbus/leading), codesync,
// the code distributor, the gRPC services and the HTTP server of the REST
// API and web UI. cmd/nimbus is a thin main around it, and the tests of
// this package run the same Server in-process against a real ZooKeeper
// (inprocess_test.go).
//
// Beside the wiring (server.go, status.go, ui.go, metrics.go, codec.go) it
// holds the NimbusService handlers (service.go and the files each names:
// submit.go, receive.go, admission.go, idlestream.go, forget.go,
// linearizable.go, topologyconf.go, nimbusconfig.go), which validate
// (package validate), call the domain code, and end with
// apistatus.ToStatus, the one place errors become gRPC codes. The edits of
// a topology's StormBase they write are package nimbus/topology's.
package nimbus
