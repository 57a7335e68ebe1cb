package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step each time it is read.
func fakeClock(step time.Duration) func() time.Time {
	t := time.Unix(1700000000, 0)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func TestProgressBarThrottlesAndEnds(t *testing.T) {
	var b bytes.Buffer
	p := &progressBar{w: &b, now: fakeClock(40 * time.Millisecond)}
	const total = 10 << 20
	for sent := int64(1 << 20); sent <= total; sent += 1 << 20 {
		p.update(sent, total)
	}
	p.finish()
	out := b.String()
	// Updates 40 ms apart: the first draws, then every third (120 ms
	// later), and the last always: updates 1, 4, 7 and 10.
	if n := strings.Count(out, "\r"); n != 4 {
		t.Errorf("drew %d times, want 4:\n%q", n, out)
	}
	lines := strings.Split(out, "\r")
	last := lines[len(lines)-1]
	if want := "uploading [##############################] 100% 10.0/10.0 MiB\n"; last != want {
		t.Errorf("last drawing %q, want %q", last, want)
	}
	if first := lines[1]; first != "uploading [###...........................]  10% 1.0/10.0 MiB" {
		t.Errorf("first drawing %q", first)
	}
}

func TestProgressBarRestartBlanksLeftovers(t *testing.T) {
	var b bytes.Buffer
	p := &progressBar{w: &b, now: fakeClock(time.Second)}
	p.update(100<<20, 100<<20)
	p.update(0, 5<<20) // a redirect starts the upload again: a shorter line
	p.finish()
	lines := strings.Split(b.String(), "\r")
	if len(lines[1]) != len(strings.TrimSuffix(lines[2], "\n")) {
		t.Errorf("the shorter line does not cover the longer one: %q", b.String())
	}
}

func TestProgressBarSilentUntilDrawn(t *testing.T) {
	var b bytes.Buffer
	p := &progressBar{w: &b, now: fakeClock(time.Second)}
	p.finish()
	if b.Len() != 0 {
		t.Errorf("finish wrote %q without drawing", b.String())
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
	// A character device, as a terminal is.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	if !isTerminal(null) {
		t.Errorf("%s is not a character device", os.DevNull)
	}
}
