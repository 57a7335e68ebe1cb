// Command wordcount is an example topology worker: the process a supervisor
// starts for one slot of a topology. It listens on its slot port, answers
// "who are you" queries there, and simulates a word count with the executors
// it was given. See README.md.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }

// run runs the worker until SIGTERM or SIGINT and returns the exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return runContext(ctx, args, getenv, stdout, stderr)
}
