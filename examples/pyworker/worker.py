#!/usr/bin/env python3
"""A Storm worker in Python that speaks the worker protocol (workerproto).

It counts one stream, "default" of the spout "ticks", and writes the count to
$STORM_METRICS_FILE every second; it stops emitting while $STORM_STATUS_FILE
says anything but "active" (re-read on SIGUSR1), and exits 0 on SIGTERM after
writing its final counts.
"""
import json, os, signal, sys, time

status_file = os.environ.get("STORM_STATUS_FILE")
metrics_file = os.environ.get("STORM_METRICS_FILE")
started_ms = int(time.time() * 1000)
state = {"active": True, "stop": False}

def read_status(*_):
    if status_file:
        try:
            with open(status_file) as f:
                state["active"] = f.read().strip() == "active"
        except OSError:
            pass  # the last status stands

def stop(*_):
    state["stop"] = True

def write_metrics(emitted):
    if not metrics_file:
        return
    doc = {"version": 1, "taken_unix_ms": int(time.time() * 1000),
           "started_unix_ms": started_ms,
           "streams": [{"component": "ticks", "stream": "default", "kind": "spout",
                        "executors": 1, "emitted": emitted, "transferred": emitted}]}
    tmp = metrics_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, metrics_file)  # atomic: the supervisor never sees half a file

signal.signal(signal.SIGUSR1, read_status)  # subscribe first, then read
signal.signal(signal.SIGTERM, stop)
read_status()
emitted = 0
print("pyworker started", os.environ.get("STORM_TOPOLOGY_ID"), flush=True)
while not state["stop"]:
    if state["active"]:
        emitted += 1
    write_metrics(emitted)
    time.sleep(1)
write_metrics(emitted)
print("pyworker stopping emitted=%d" % emitted, flush=True)
sys.exit(0)
