// Package worker is THE way to write a Storm worker in Go for Nimbus-HA:
// the program a supervisor starts for one slot of a topology. It speaks
// the worker protocol (package workerproto, whose doc.go is the
// language-neutral contract) so that a worker's code says only what it
// does:
//
//   - Status: Worker.Emitting, Worker.WaitEmitting, Worker.StatusChanges
//     and Config.OnStatus follow the topology's status (active, inactive,
//     killed) from the status file, read again on each SIGUSR1; spouts
//     emit only while active.
//   - Errors: Worker.ReportError appends to the error file; the supervisor
//     shows the latest as the worker's last error.
//   - Counters: Worker.Spout and Worker.Bolt give a Component, and
//     Component.Stream the counters of one stream, Storm's (emitted,
//     transferred, acked, failed, executed, with complete, process and
//     execute latencies); a bolt counts what it receives per source
//     component with Component.Input, as Storm's input stats are.
//     Counting is an atomic add. Run writes them to the metrics file every
//     Config.MetricsInterval and when it stops; the supervisor carries them in its heartbeat to the nimbuses. A name the
//     protocol refuses counts but is not reported (named once in the log),
//     and streams beyond the file's 256 KiB are left out, the quietest
//     first, so one bad name never stops the rest.
//   - Log levels: Worker.Logger(name) and Worker.Handler give log/slog
//     loggers whose level follows the log-level file (Storm's
//     set-log-level): a logger is named by its "logger" attribute
//     (LoggerKey), a dotted path such as "wordcount.split", and takes its
//     own level, else its nearest named parent's, else ROOT's, else
//     Config.DefaultLevel.
//   - Blobs: Worker.Blobs, Worker.BlobPath, Worker.BlobUpdates and
//     Config.OnBlobUpdate follow the blobs its topology names
//     (topology.blobstore.map) from the blobs file, read again on each
//     SIGUSR1: the supervisor switches a blob's link to its new version
//     atomically, then says so; the worker opens the path again.
//   - A clean stop: on SIGTERM or SIGINT (or its context's end) Run stops
//     the spouts, cancels the worker's context, writes the final counts
//     and returns; Main exits 0.
//
// A worker started by hand, without the supervisor's environment, runs as
// if active and reports nowhere. The package imports only workerproto and
// the standard library, never a daemon package. examples/wordcount is a
// whole worker written with it.
package worker
