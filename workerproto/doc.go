// Package workerproto is the contract between a supervisor and the worker
// processes it starts (docs/ARCHITECTURE.md sections 7 and 16.6): how a
// worker learns its topology's status, and how it reports an error that
// its supervisor then publishes as the worker's last error (Storm's
// reportError). The supervisor and the example worker (examples/wordcount)
// both use it, so the protocol is written down once, here.
//
// Status. The supervisor writes a file whose path is in the worker's
// environment as STORM_STATUS_FILE. It holds one word and a newline:
// "active", "inactive" or "killed". It is written before the worker starts
// and replaced atomically (write a temporary file, rename) whenever the
// topology's status changes, so a reader sees the old content or the new,
// never a mix. After each change the supervisor sends SIGUSR1 to the
// worker's process (its pid, not its process group, and only when that
// process catches SIGUSR1: a program that does not would die of it). A
// worker subscribes to SIGUSR1 first, then reads the file, and reads it
// again on every SIGUSR1: that order misses no change. "inactive" and
// "killed" mean: stop emitting from spouts (bolts finish what is in
// flight); "active": emit. "killed" is final: the worker is stopped
// (SIGTERM) when the topology's kill wait ends. A worker run through a
// shell must exec its program for the signal to reach it, or poll the file.
//
// Errors. A worker appends one line per error, UTF-8 text ending in '\n',
// to the file named by STORM_ERROR_FILE. The supervisor creates the file
// empty at each start of the worker, and at each heartbeat publishes the
// last complete line written since it last looked (at most 512 bytes of
// it) as the worker's last_error, stamped with the file's modification
// time. A later exit of the worker replaces it, as any newer error does.
//
// Both files live in the worker's own directory, which the worker may read
// but not write: the status file is the supervisor's, the error file the
// worker may only write into. Workers and tools that do not know the
// protocol may ignore both.
package workerproto
