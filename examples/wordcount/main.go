// Command wordcount is an example topology worker: the process a supervisor
// starts for one slot of a topology. It listens on its slot port, answers
// "who are you" queries there, and simulates a word count with the executors
// it was given, written with package worker: it follows its topology's
// status and log levels and reports Storm's counters. See README.md.
package main

import (
	"context"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }

// run runs the worker until SIGTERM or SIGINT (package worker stops it
// cleanly) and returns the exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, getenv, stdout, stderr)
}
