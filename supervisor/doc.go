// Package supervisor is the supervisor daemon (docs/ARCHITECTURE.md
// section 7): it registers under /supervisors with a stable id, heartbeats,
// watches the assignments, fetches and verifies the code of the topologies
// assigned to it, and runs one worker process per assigned slot, restarting
// crashed workers with backoff and stopping those whose assignment is gone.
// Like the nimbus it is a Start, ReadyNotify, Err, Close lifecycle around a
// thin main.
//
// It acts on the last assignments it saw, so its workers keep running while
// nimbus or ZooKeeper is away (invariant 7); when they return it reconciles
// without restarting workers whose assignment did not change. Workers die
// with their supervisor (Linux's parent-death signal), so a supervisor that
// is killed never leaves workers behind to double up with their
// replacements elsewhere.
//
// Workers get an allow-listed environment, never the supervisor's (env.go).
// With supervisor.run.worker.as.user each runs as its topology owner's
// local user, never as root, and reads only its own topology's code
// (runas.go, launch.go); a worker that cannot be started so is refused,
// visibly in its heartbeat state, and retried with backoff.
//
// Workers hear their topology's status (active, inactive, killed) and
// report errors through the worker protocol, package workerproto
// (protocol.go): a status file rewritten from the /storms cache plus
// SIGUSR1, and an error file whose latest line becomes the worker's
// last_error. A ZooKeeper outage keeps the last status. Workers report
// Storm's counters in a metrics file that each heartbeat reads and carries
// within its budget, streams folded away before components are dropped
// (workermetrics.go, metricsbudget.go).
//
// Blobs a topology names (topology.blobstore.map) are placed in each of
// its workers' directories before the worker starts, switched atomically
// when updated and announced through the worker protocol's blobs file and
// SIGUSR1, or the worker restarted (blobs.go, with blobstore.Localizer).
package supervisor
