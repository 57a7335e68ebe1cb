// Package validate checks every request before anything is written
// (docs/ARCHITECTURE.md invariant 8): the topology spec of a submission, the
// unary requests, the CodeService requests, and the rules behind them (names,
// component ids, topology ids, code file names). A problem is an *Error
// naming the field and the reason; client-supplied values are shown quoted
// and truncated, so a huge or hostile value cannot bloat an error or a log.
//
// It also owns the worker command's placeholders ({code_dir}, {port},
// {topology_id}; workercommand.go): the one list that WorkerCommand checks a
// spec against, refusing any other {name}, and that the supervisor
// substitutes with ExpandWorkerCommand, so the two cannot disagree.
//
// LinkURL checks a base URL another daemon registered (a supervisor's
// logviewer_url) before a link or a request is made from it.
//
// It is pure logic, without I/O, and fuzzed: its rules are what keeps a
// name from escaping a directory and a request from making the leader store
// more in ZooKeeper than a node can hold.
package validate
