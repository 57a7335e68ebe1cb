// Package integration runs Nimbus-HA as real processes against a real
// ZooKeeper (and HDFS) and checks the design's invariants from the
// outside: election and failover, replication and kill, code-gated
// leadership, supervisors and workers, ensemble failures, BitTorrent,
// hostile state and the CLI. It has only tests; the framework they use,
// which builds the daemons once per run and starts, stops and waits for
// them, is internal/testkit/testcluster.
package integration
