// Package workerproto is the contract between a supervisor and the worker
// processes it starts (docs/ARCHITECTURE.md sections 7 and 16.6), written
// down once, here, in terms any language can follow: how a worker learns
// its topology's status, its loggers' levels and its blobs, how it reports an error
// that its supervisor then publishes as the worker's last error (Storm's
// reportError), and how it reports its counters (Storm's emitted, acked,
// ...), which its supervisor carries in its heartbeat. The supervisor and
// the worker library (package worker) both use it.
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
// Metrics. A worker reports what it counted by replacing the file named by
// STORM_METRICS_FILE atomically: it writes a temporary file in the same
// directory and renames it over the file (os.replace in Python, rename(2)),
// so the supervisor reads the old content or the new, never a mix. It does
// so as often as it likes (every few seconds) and once more when it stops.
// The content is one JSON object, version 1:
//
//	{"version": 1, "taken_unix_ms": 1700000000000, "started_unix_ms": 1699999990000,
//	 "streams": [
//	   {"component": "sentence", "stream": "default", "kind": "spout", "executors": 1,
//	    "emitted": 120, "transferred": 120, "acked": 118, "failed": 1,
//	    "complete_latency_us": 590000},
//	   {"component": "split", "source": "sentence", "stream": "default", "kind": "bolt", "executors": 2,
//	    "executed": 118, "acked": 118, "execute_latency_us": 2300, "process_latency_us": 2500},
//	   {"component": "split", "stream": "default", "kind": "bolt", "executors": 2,
//	    "emitted": 950, "transferred": 950}]}
//
// "started_unix_ms", when the run started, is required and not 0: a new
// value is how readers tell a restart, whose counters begin again. Every
// counter is cumulative since the worker's run started (Storm's
// words: emitted, transferred, acked, failed, executed; latencies are sums
// in microseconds, to be divided by acked or executed); absent counters are
// 0 and unknown fields are ignored. "kind" is "spout" or "bolt"; component
// and stream are non-empty (at most 256 bytes). "source", optional, names
// the component a bolt received the row's tuples from (Storm's input
// stats are per source component and stream): a bolt writes its
// input-side counts (acked, failed, executed, their latencies) in rows
// with a source and its emitted and transferred in a row without; a row
// without one is counted as from an unnamed source. A (component, source,
// stream) triple appears once. The supervisor creates the file's directory, owned by
// the worker's user, and removes the file at each start of the worker, so
// a run that wrote nothing has no metrics (not zeros). At each heartbeat
// it reads the file if it changed: a file larger than 256 KiB, a symbolic
// link, not a regular file, of another owner, or that does not parse is
// ignored (named once in the supervisor's log) and the last good content
// stands. It carries the counts in its heartbeat within a size budget,
// leaving out streams, then components, when a worker reports too many
// (docs/ARCHITECTURE.md section 7), and only rows of the components
// STORM_EXECUTORS names, with at most 128 stream names per run: the
// heartbeat is readable by anyone.
//
// Log levels. The supervisor may write the file named by
// STORM_LOG_LEVEL_FILE: one JSON object of logger names to levels, Storm's
// (log4j's) names in any case (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL,
// OFF), for example {"ROOT": "INFO", "wordcount.split": "DEBUG"}. Logger
// names are dotted paths: a logger takes its own entry, else its nearest
// parent's, else "ROOT"'s, else the worker's default. The file is replaced
// atomically and followed by SIGUSR1, as the status file is; a worker
// re-reads both on each SIGUSR1. No file means no levels set.
//
// Blobs. The blobs a topology names in topology.blobstore.map are in the
// worker's directory before it starts, each a symbolic link named by its
// localname that points at one version, read-only: the blob's content, or
// with "uncompress" the directory it unpacks to. When a blob is updated the
// supervisor switches the link to the new version atomically (a new link
// renamed over the old), so a worker that opens the link reads the old
// version or the new, never a mix; a file it has open stays the old one.
// The file named by STORM_BLOBS_FILE lists what is placed, one line per
// blob, sorted by localname, each line ending in '\n':
//
//	model 3 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//
// the localname, the version (1, 2, ...) and the SHA-256 of the blob's
// content (as stored, before unpacking), separated by one space. It is
// replaced atomically after every switch and followed by SIGUSR1, as the
// status file is; a worker that follows SIGUSR1 reads it again and acts on
// the lines that changed. A blob whose topology.blobstore.map entry has
// "workerRestart": true is not announced: the worker is restarted with
// the new version in place. Without blobs the file is absent.
//
// The status, error, log-level and blobs files and the blobs' links live
// in the worker's own directory, which the worker may read but not write:
// the status, log-level and blobs files are the supervisor's, the error file the worker may only
// write into. The metrics file lives in a subdirectory that is the
// worker's. Workers and tools that do not know the protocol may ignore
// them all.
//
// A worker in another language needs a few lines; this Python 3 worker
// (examples/pyworker/worker.py, which the tests run) reports one counter:
//
//	import json, os, signal, time
//	status_file = os.environ.get("STORM_STATUS_FILE")
//	metrics_file = os.environ.get("STORM_METRICS_FILE")
//	started_ms, state = int(time.time() * 1000), {"active": True, "stop": False}
//	def read_status(*_):
//	    if status_file:
//	        with open(status_file) as f:
//	            state["active"] = f.read().strip() == "active"
//	def write_metrics(emitted):
//	    doc = {"version": 1, "taken_unix_ms": int(time.time() * 1000), "started_unix_ms": started_ms,
//	           "streams": [{"component": "ticks", "stream": "default", "kind": "spout",
//	                        "executors": 1, "emitted": emitted}]}
//	    with open(metrics_file + ".tmp", "w") as f:
//	        json.dump(doc, f)
//	    os.replace(metrics_file + ".tmp", metrics_file)
//	signal.signal(signal.SIGUSR1, read_status)  # subscribe first, then read
//	signal.signal(signal.SIGTERM, lambda *_: state.update(stop=True))
//	read_status()
//	emitted = 0
//	while not state["stop"]:
//	    emitted += state["active"]
//	    if metrics_file:
//	        write_metrics(emitted)
//	    time.sleep(1)
//
// Go workers use package worker (github.com/nimbusha/nimbus/worker), which
// speaks all of this; Worker here is the protocol's plain helpers.
package workerproto
