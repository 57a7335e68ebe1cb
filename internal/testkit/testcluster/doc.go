// Package testcluster is the one test framework of Nimbus-HA: the real
// components tests run against, and the helpers to start, stop, break and
// wait for them. Package tests, integration/, integration/chaos and bench/
// all use it.
//
// Daemons (build.go, main.go, cluster.go, daemons.go, process.go,
// readyline.go, grpc.go, leader.go). A package whose tests run daemons has
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
//
// Main builds the programs (./cmd/..., ./examples/...) once per run into a
// temporary directory, when a test first needs them, with BuildTags and
// -race (WithRace(false) for benchmarks: no race detector, no cgo). New
// returns a Cluster on one ZooKeeper; StartNimbus and StartSupervisor run
// a daemon as a real process on free loopback ports and wait for the
// ready line it logs once it serves; WaitLeader, WaitQueued and
// AgreedLeader wait for leadership as clients and ZooKeeper see it. The
// processes stop at the end of the test, and their logs are printed if it
// failed.
//
// Security (security.go, grpc.go). NewSecurity makes a test's throwaway
// CA, a certificate per principal (Client, Foreign for one another CA
// signed, Anonymous for none) and ZooKeeper digest credentials;
// WithSecurity(sec) makes a Cluster whose daemons serve and dial over TLS
// with certificates of their own (NimbusPrincipal, SupervisorPrincipal;
// Process.Identity), require client certificates, name AdminPrincipal in
// nimbus.admins and the daemons' principals in nimbus.supervisor.users
// and nimbus.daemon.users, and create their ZooKeeper nodes with ACLs.
// Conn, API, Health and the leader helpers then dial as sec.Admin, ConnAs,
// APIAs, CodeAs and HealthAs as anyone, and Process.Metrics speaks HTTPS.
// Reissue rotates a certificate in place; Identity gives stormctl's flags
// (ClientFlags) or a storm.yaml (WriteConfig). The certificates are made
// with package certs, as `stormctl tls` makes them.
//
// ZooKeeper (zookeeper.go, ensemble.go, zkclient.go). Servers are real
// Java processes from Debian's zookeeper package (3.8), started without
// systemd with a temporary data directory: StartZooKeeper for one
// standalone server, StartEnsemble for a quorum. Each runs in its own
// process group and is stopped, and its directory removed, at the test's
// cleanup; when the test failed, the tail of each server's log is printed.
// ConnectZooKeeper opens a session of the test's own (ConnectZooKeeperAs
// one authenticated with a digest), DeleteTree deletes a subtree in one
// multi.
//
// HDFS (hdfs.go): a real NameNode and DataNode from Hadoop's jars.
//
// Network (ports.go, cutter.go, proxy.go, peernet.go). FreePorts is the one
// place that picks ports for servers started later: below the kernel's
// ephemeral range, so that no outgoing connection takes them in between.
// Cutter is a dialer and Proxy a TCP forwarder that cut a client off the
// network; Proxy.Drop black-holes one direction or both and leaves the
// connections open. PeerNet cuts daemons off each other while each keeps
// everything else: per-daemon /etc/hosts in a mount namespace, a loopback
// address per pair, blackhole routes (root, unshare, ip; PeerNetAvailable).
//
// Waiting (wait.go). WaitFor polls a condition under a deadline and Poll
// does the same without a test; tests use them instead of sleeps.
//
// A missing ZooKeeper, Java or Hadoop installation fails the test with a
// hint to run `make test`, which installs them
// (scripts/install-test-deps.sh).
package testcluster
