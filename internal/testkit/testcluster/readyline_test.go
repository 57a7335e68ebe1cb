package testcluster

import "testing"

func TestParseLogLine(t *testing.T) {
	for _, tc := range []struct {
		line          string
		ok, ready, bt bool
		addr, metrics string
		id            string
	}{
		{line: `{"msg":"nimbus ready","addr":"127.0.0.1:6627","metrics":"127.0.0.1:9100"}`, ok: true, ready: true,
			addr: "127.0.0.1:6627", metrics: "127.0.0.1:9100"},
		{line: `{"msg":"supervisor ready","id":"s-1","metrics":"127.0.0.1:9101"}`, ok: true, ready: true,
			metrics: "127.0.0.1:9101", id: "s-1"},
		{line: `{"msg":"bittorrent peer listening","addr":"127.0.0.1:41234"}`, ok: true, bt: true, addr: "127.0.0.1:41234"},
		{line: `{"msg":"leader elected"}`, ok: true},
		{line: `panic: ready`},
	} {
		l, ok := parseLogLine([]byte(tc.line))
		if ok != tc.ok || l.ready() != tc.ready || l.torrent() != tc.bt || l.Addr != tc.addr || l.Metrics != tc.metrics || l.ID != tc.id {
			t.Errorf("%s: got %+v ok=%v ready=%v torrent=%v", tc.line, l, ok, l.ready(), l.torrent())
		}
	}
}
