// Package integration runs Nimbus-HA as real processes against a real
// ZooKeeper and checks the design's invariants from the outside. Process
// is one daemon started from a binary built once per test run; Cluster
// starts and stops them and waits for conditions under deadlines.
package integration
