// Package logviewer serves workers' logs, Storm's logviewer API, on every
// supervisor (docs/ARCHITECTURE.md section 23), and owns where those logs
// live on its disk.
//
// Layout. A worker's output is in
// <storm.local.dir>/workers-artifacts/<topology-id>/<port>/worker.log,
// rotated by size into worker.log.1 (the newest) to worker.log.9, as Storm
// names them (uncompressed). Beside it, worker.yaml records whom the
// topology's logs belong to (its owner, topology.users and logs.users), so
// that they stay readable, to the same principals only, after the
// topology is gone. Directories are 0750 and files 0640, owned by the
// supervisor's user with the worker's group: only the worker's user, the
// supervisor and its logviewer read them. Prepare makes a worker's
// directory; the supervisor's keeper writes the log (package keeper).
//
// API. Storm's paths and parameters, under /api/v1: log (a byte range,
// text), download (the whole file), listLogs, search (a plain substring,
// within a byte budget and a time budget) and deepSearch (every worker
// of a topology on this supervisor). Every request is authenticated as
// the nimbuses' REST API authenticates (the client certificate, package
// auth) and authorized with auth.ActionReadLogs against the topology's
// worker.yaml: its owner, topology.users, logs.users (the topology's and
// this supervisor's) and nimbus.admins. A file is named
// <topology-id>/<port>/<name> and opened under the root only (os.Root: no
// "..", no absolute path, nothing outside it whatever links appear), each
// part of its path checked with Lstat first (directories, then a regular
// file: no symlink anywhere) and the opened file the one checked; anything
// else is a 400 naming the parameter, an unknown topology or port a 404,
// and nothing is changed. A request whose Host does not name the
// supervisor is refused (package hostcheck: DNS rebinding).
//
// Cap. Enforce keeps the sum of all workers' logs within
// logviewer.max.sum.worker.logs.size.mb, deleting the oldest of the
// rotated files and the logs of workers no longer running here first; a
// running worker's current log is never deleted.
package logviewer
