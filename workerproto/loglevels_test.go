package workerproto

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogLevelsParseAndEffective(t *testing.T) {
	l, err := ParseLogLevels([]byte(`{"ROOT":"warn","wordcount":"Info","wordcount.split":"DEBUG"}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Level{
		"wordcount.split": LevelDebug, "wordcount.split.words": LevelDebug, "wordcount.count": LevelInfo,
		"wordcount": LevelInfo, "other": LevelWarn, "": LevelWarn, "wordcount.splitter": LevelInfo,
	} {
		if got, ok := l.Effective(name); !ok || got != want {
			t.Errorf("Effective(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := (LogLevels{"a": LevelInfo}).Effective("b"); ok {
		t.Error("a logger with no entry, no parent's and no ROOT has a level")
	}
	b, err := EncodeLogLevels(l)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"ROOT":"WARN","wordcount":"INFO","wordcount.split":"DEBUG"}`+"\n" {
		t.Errorf("EncodeLogLevels = %s", b)
	}
	if l, err := ParseLogLevels([]byte(" \n")); err != nil || len(l) != 0 {
		t.Errorf("empty file: %v, %v", l, err)
	}
}

func TestParseLogLevelsRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`["ROOT"]`, "want one JSON object"},
		{`{"ROOT":"LOUD"}`, `logger "ROOT": level "LOUD" is none of`},
		{`{"ROOT":1}`, "want one JSON object"},
		{`{"":"INFO"}`, "logger name: empty"},
		{`{"a":"INFO"}{}`, "more than one JSON value"},
		{strings.Repeat(" ", MaxLogLevelBytes+1), "more than"},
	} {
		if _, err := ParseLogLevels([]byte(tc.in)); !errors.Is(err, ErrBadLogLevels) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLogLevels(%.40q): %v, want ErrBadLogLevels saying %q", tc.in, err, tc.want)
		}
	}
	if _, err := EncodeLogLevels(LogLevels{"a": "loud"}); !errors.Is(err, ErrBadLogLevels) {
		t.Errorf("EncodeLogLevels of a bad level: %v", err)
	}
}

func TestReadLogLevels(t *testing.T) {
	w := Worker{LogLevelFile: filepath.Join(t.TempDir(), LogLevelFileName)}
	if l, err := w.LogLevels(); err != nil || len(l) != 0 {
		t.Fatalf("no file yet: %v, %v; want no levels", l, err)
	}
	if err := os.WriteFile(w.LogLevelFile, []byte(`{"ROOT":"ERROR"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := w.LogLevels(); err != nil || l[RootLogger] != LevelError {
		t.Fatalf("LogLevels() = %v, %v", l, err)
	}
	if err := os.WriteFile(w.LogLevelFile, []byte(`{"ROOT":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.LogLevels(); !errors.Is(err, ErrBadLogLevels) {
		t.Fatalf("a cut file: %v", err)
	}
}
