// Package testkit holds nothing itself: its subpackages are the test kit of
// Nimbus-HA, imported only by tests and benchmarks, never by a daemon.
//
//   - testcluster: the one framework that runs real components (ZooKeeper,
//     ensembles, HDFS, the daemons as processes, TLS material, proxies)
//     and waits for them;
//   - conformance: the scenarios every code distributor backend passes;
//   - fakenimbus: the one fake NimbusService, for the SDK's and stormctl's
//     tests;
//   - authtest: a throwaway CA and a loopback TLS gRPC server;
//   - grpctest: a test's gRPC server, stopped when the test ends;
//   - jsonshape: JSON documents checked against the shape of a fixture (Storm's REST API).
//
// Being above every production package, the kit may import any of them;
// nothing below it imports the kit (internal/archtest checks both).
package testkit
