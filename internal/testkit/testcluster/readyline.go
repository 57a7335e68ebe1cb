package testcluster

import (
	"encoding/json"
	"strings"
)

// The daemons log JSON lines (--log.format json) to stderr. Two lines tell
// the harness where a daemon is:
//
//	{"msg":"bittorrent peer listening","addr":"127.0.0.1:41234",...}  (before the ready line)
//	{"msg":"nimbus ready","addr":"127.0.0.1:6627","metrics":"127.0.0.1:9100","ui":"127.0.0.1:8080",...}
//	{"msg":"supervisor ready","id":"<supervisor id>","metrics":"...",...}
//
// A daemon logs its ready line once it has bound its ports (0 picks free
// ones), registered in ZooKeeper and loaded what it serves, so the
// addresses in the line are the ones it answers on.
const (
	readySuffix    = " ready"
	torrentMessage = "bittorrent peer listening"
)

// logLine is what the harness reads of one log line.
type logLine struct {
	Msg     string `json:"msg"`
	Addr    string `json:"addr"`
	Metrics string `json:"metrics"`
	UI      string `json:"ui"`
	ID      string `json:"id"`
}

// parseLogLine decodes a JSON log line; ok is false for anything else
// (a panic's trace, a worker's output).
func parseLogLine(line []byte) (l logLine, ok bool) {
	if json.Unmarshal(line, &l) != nil {
		return logLine{}, false
	}
	return l, true
}

// ready reports whether the line is a daemon's ready line.
func (l logLine) ready() bool { return strings.HasSuffix(l.Msg, readySuffix) }

// torrent reports whether the line gives the BitTorrent peer's address.
func (l logLine) torrent() bool { return l.Msg == torrentMessage }
