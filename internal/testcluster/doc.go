// Package testcluster owns the real components that tests run against, and the
// helpers to wait for them.
//
// ZooKeeper servers are real Java processes from Debian's zookeeper package
// (3.8), started without systemd on free loopback ports with a temporary data
// directory: StartZooKeeper for one standalone server, StartEnsemble for a
// quorum. Each process runs in its own process group and is stopped, and its
// directory removed, at the test's cleanup; when the test failed, the tail of
// each server's log is printed. A missing installation fails the test with a
// hint to run `make test`, which installs it (scripts/install-test-deps.sh).
//
// WaitFor polls a condition under a deadline; tests use it instead of sleeps.
// Cutter is a dialer that cuts a client off the network.
package testcluster
