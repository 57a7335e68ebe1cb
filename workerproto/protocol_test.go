package workerproto

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStatus(t *testing.T) {
	for _, s := range []Status{Active, Inactive, Killed} {
		got, err := ParseStatus(s.Encode())
		if err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %q, %v", s.Encode(), got, err)
		}
	}
	for _, bad := range []string{"", "ACTIVE", "paused\n", "active inactive"} {
		if _, err := ParseStatus([]byte(bad)); !errors.Is(err, ErrBadStatus) {
			t.Errorf("ParseStatus(%q): %v, want ErrBadStatus", bad, err)
		}
	}
	if !Active.Emits() || Inactive.Emits() || Killed.Emits() {
		t.Error("only active emits")
	}
}

func TestLastLine(t *testing.T) {
	for _, tc := range []struct {
		in, line string
		consumed int
		ok       bool
	}{
		{"", "", 0, false},
		{"partial", "", 0, false},
		{"one\n", "one", 4, true},
		{"one\ntwo\r\nthr", "two", 9, true},
		{"\n", "", 1, true},
		{strings.Repeat("x", 600) + "\n", strings.Repeat("x", MaxErrorBytes), 601, true},
	} {
		line, n, ok := LastLine([]byte(tc.in))
		if line != tc.line || n != tc.consumed || ok != tc.ok {
			t.Errorf("LastLine(%q) = %q, %d, %v; want %q, %d, %v", tc.in, line, n, ok, tc.line, tc.consumed, tc.ok)
		}
	}
}

func TestWorkerWithoutFiles(t *testing.T) {
	w := FromEnv(func(string) string { return "" })
	if st, err := w.Status(); st != Active || err != nil {
		t.Fatalf("Status() = %q, %v; want active", st, err)
	}
	if err := w.ReportError("x"); err != nil {
		t.Fatal(err)
	}
	if st := <-w.Watch(t.Context(), func(err error) { t.Error(err) }); st != Active {
		t.Fatalf("Watch gave %q", st)
	}
}

func TestWatchAndReport(t *testing.T) {
	dir := t.TempDir()
	w := Worker{StatusFile: filepath.Join(dir, StatusFileName), ErrorFile: filepath.Join(dir, ErrorFileName)}
	write := func(content string) {
		if err := os.WriteFile(w.StatusFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(os.Getpid(), StatusSignal); err != nil {
			t.Fatal(err)
		}
	}
	write("inactive\n")
	errs := make(chan error, 4)
	ch := w.Watch(t.Context(), func(err error) { errs <- err })
	next := func() Status {
		t.Helper()
		select {
		case st := <-ch:
			return st
		case <-time.After(10 * time.Second):
			t.Fatal("no status")
			return ""
		}
	}
	if st := next(); st != Inactive {
		t.Fatalf("first status %q", st)
	}
	write("garbage\n") // reported, and the last status stands
	select {
	case err := <-errs:
		if !errors.Is(err, ErrBadStatus) {
			t.Fatalf("onErr got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bad status not reported")
	}
	write("killed\n")
	if st := next(); st != Killed {
		t.Fatalf("status %q, want killed", st)
	}

	if err := w.ReportError("x"); err == nil {
		t.Fatal("ReportError created the error file; only the supervisor may")
	}
	if err := os.WriteFile(w.ErrorFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.ReportError("first\nerror"); err != nil {
		t.Fatal(err)
	}
	if err := w.ReportError("second"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(w.ErrorFile)
	if string(b) != "first error\nsecond\n" {
		t.Fatalf("error file %q", b)
	}
}
