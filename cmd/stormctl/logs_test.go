package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestLogsOptionsNameTheBadFlag(t *testing.T) {
	for _, tc := range []struct {
		o    logsOptions
		flag string
	}{
		{logsOptions{grep: "(", every: 1}, "--grep: "},
		{logsOptions{grep: strings.Repeat("a", maxGrepLen+1), every: 1}, "--grep: "},
		{logsOptions{worker: "host", every: 1}, "--worker: "},
		{logsOptions{bytes: -1, every: 1}, "--bytes: "},
		{logsOptions{}, "--interval: "},
	} {
		if err := tc.o.check(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.flag)
		}
	}
}

func TestPickWorkers(t *testing.T) {
	info := &nimbusv1.GetTopologyInfoResponse{Workers: []*nimbusv1.WorkerSummary{
		{Host: "h1", Port: 6700}, {Host: "h2", Port: 6701},
	}}
	if ws, err := pickWorkers(info, ""); err != nil || len(ws) != 2 {
		t.Fatalf("all: %v %v", ws, err)
	}
	if ws, err := pickWorkers(info, "h2:6701"); err != nil || len(ws) != 1 || ws[0].GetHost() != "h2" {
		t.Fatalf("h2:6701: %v %v", ws, err)
	}
	if _, err := pickWorkers(info, "h3:6700"); err == nil || !strings.Contains(err.Error(), "its workers: h1:6700, h2:6701") {
		t.Fatalf("unknown worker: %v", err)
	}
}

// Whole lines only, filtered, prefixed; a line without its end waits.
func TestLogTailEmitsWholeMatchingLines(t *testing.T) {
	var out bytes.Buffer
	tl := &logTail{out: &out, prefix: "h:1 | "}
	tl.re, _ = compileForTest("ERR")
	tl.partial = []byte("ok 1\nERR 2\nERR par")
	tl.emit()
	if out.String() != "h:1 | ERR 2\n" || string(tl.partial) != "ERR par" {
		t.Fatalf("out %q, partial %q", out.String(), tl.partial)
	}
	tl.flush()
	if out.String() != "h:1 | ERR 2\nh:1 | ERR par\n" {
		t.Fatalf("after flush %q", out.String())
	}
}

func compileForTest(re string) (*regexp.Regexp, error) {
	o := logsOptions{grep: re, every: 1}
	err := o.check()
	return o.re, err
}
