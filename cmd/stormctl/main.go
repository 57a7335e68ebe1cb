// Command stormctl is the command-line client of a Nimbus-HA cluster: it
// reads the cluster's state, submits topologies and manages them through
// package client, which finds the leader and retries what is safe to
// retry.
//
// Files: main.go starts it; root.go owns the global flags, the config
// file, the client and error lines; exitcodes.go the exit codes and JSON
// errors; read.go holds the read commands; submit.go
// the upload (progress.go its progress bar, split.go the worker command's
// quoting); manage.go kill, activate, deactivate and rebalance; version.go
// the client's and the leader's versions; flags.go parses flag values;
// output.go renders tables and JSON; jsonwords.go puts JSON in the
// tables' words (numbers, hex, enum words).
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
