// Package fakenimbus is an in-process NimbusService for the tests of code
// that calls one: the Go SDK (client) and stormctl. It is a fake, not a
// model: each RPC answers what the test's func for it says, and
// Unimplemented without one. It counts calls and records requests so a
// test can check what reached the server, receives submissions whole
// (Receive), and serves on 127.0.0.1:0 until the test ends (Start). The
// one model is Blobs, an in-memory blob store without ACLs that answers
// the blob RPCs as a leader would (Blobs.Serve), for the tests of the
// blob commands.
//
// For tests against real daemons, see internal/testkit/testcluster.
package fakenimbus
