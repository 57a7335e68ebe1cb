// Package keeper keeps one worker process running across restarts of the
// supervisor that started it, and ends it when no supervisor comes back in
// time (docs/ARCHITECTURE.md section 17). It is a contract between two
// processes that may be of different versions, a supervisor and its
// keepers, written down once here, as package workerproto is between a
// supervisor and its workers.
//
// Process. A supervisor starts a keeper from its own binary, with the
// argument Command, in a session of its own, so that neither its signals
// nor its exit reach the keeper; with the keeper's own log as its stdout
// and stderr, a pipe as its file 3, the worker's log as its file 4 (the
// worker's stdout and stderr), and a Launch, JSON, on its stdin. The keeper binds its socket (Launch.Socket), starts the worker
// (Launch.Path and Argv, in Launch.Dir, with Launch.Env and, if set,
// Launch.Credential) in a process group of its own and with the
// parent-death signal SIGKILL, so that a keeper that dies takes its worker
// along, writes "ok\n" or the reason it could not on file 3, and closes it.
//
// Output. With Launch.Output the worker's stdout and stderr are a pipe
// that the keeper copies into Output.Path, rotated by size (Path.1 the
// newest of Output.Keep), with the group and mode the supervisor chose:
// the keeper holds the log, so a supervisor's restart loses no line and
// doubles none. The keeper is the log's one writer: a note request's
// line (the supervisor's, Conn.Note) goes in at a line's end, and the
// worker's exit is told only once its output is written (at most
// drainWait after its group died; output still coming then is dropped),
// since the supervisor starts the next run's keeper on the same log as
// soon as it hears it.
// Without it (an older supervisor) the worker writes to file 4 itself.
//
// Socket. A supervisor talks to the keeper over a Unix stream socket, in
// lines of JSON: the keeper sends a Hello on every connection and an Exit
// when the worker ends; the supervisor sends Requests (ping, signal, stop,
// release, note). A newer connection replaces an older one: a supervisor that
// restarted adopts the keeper by connecting to it. Only a peer of the
// keeper's own user is answered (SO_PEERCRED), and the socket's directory
// is the supervisor's to protect.
//
// Adoption bound. The keeper counts from the last request it received.
// Once Launch.BoundMs passes without one, it ends the worker (SIGTERM
// Launch.GraceMs before the bound, at most half of it, then SIGKILL at the
// bound, to the worker's process group) and exits. A supervisor that
// holds a keeper pings it at least every bound/4; one that stops or dies
// leaves the keeper to count. The supervisor chooses the bound so that the
// worker is gone before the nimbus could give its slot to another host.
//
// Exit. When the worker ends, the keeper kills what is left of its process
// group and, once the worker's output is written (Output), tells the
// connected supervisor (an Exit, also in every later Hello); it exits once
// a supervisor sent release, or the bound passed.
// stop ends the worker like the bound does, with the grace the request
// names.
//
// Identity. The keeper is the worker's parent: the worker's pid cannot be
// reused before the keeper has reaped it, and the keeper signals the
// worker only while it has not. A supervisor signals its workers through
// their keepers, never by pid.
//
// Versions. Hello.Version names the protocol. Fields and requests are only
// ever added; a keeper ignores a request it does not know, a supervisor a
// field it does not know. Launch.State is the supervisor's: the keeper
// gives it back, as it was, in every Hello, so that a supervisor that
// adopts a keeper knows what its predecessor started.
package keeper
