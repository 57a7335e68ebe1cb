// Command stormctl is the command-line client of a Nimbus-HA cluster: it
// reads the cluster's state (and, as commands are added, submits and
// manages topologies) through package client, which finds the leader and
// retries what is safe to retry.
//
// Files: main.go starts it; root.go owns the global flags, the client and
// exit codes; read.go holds the read commands; output.go renders tables
// and JSON.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
