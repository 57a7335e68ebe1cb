package keeper_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/keeper"
)

// keepOutput starts a keeper of script that writes the worker's output
// itself into dir/worker.log, rotated at max bytes, keeping keep files.
func keepOutput(t *testing.T, dir, script string, max int64, keep int) (*keeper.Conn, string) {
	t.Helper()
	log := filepath.Join(dir, "worker.log")
	own, err := os.Create(filepath.Join(dir, "keeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	l := keeper.Launch{Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"},
		Socket: filepath.Join(dir, "k.sock"), BoundMs: time.Minute.Milliseconds(), GraceMs: 200,
		Output: &keeper.Output{Path: log, MaxBytes: max, Keep: keep, GID: -1, Mode: 0o640}}
	p, err := keeper.Start(os.Args[0], l, nil, own)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = p.Wait(); close(done) }()
	t.Cleanup(func() { _ = p.Kill(); <-done })
	k := &kept{t: t, proc: p, socket: l.Socket, dir: dir}
	return k.dial(), log
}

// The keeper writes every line the worker prints, in order, rotating at
// line ends once a file would pass its size, keeping the newest files
// only, each 0640 whatever the umask.
func TestOutputIsRotatedAtLineEnds(t *testing.T) {
	dir := t.TempDir()
	// 2,000 numbered lines of 10 bytes: 20,000 bytes in files of 1,000.
	c, log := keepOutput(t, dir, `i=0; while [ $i -lt 2000 ]; do printf 'line %04d\n' $i; i=$((i+1)); done`, 1000, 3)
	if e := exitOf(t, c); e.Code == nil || *e.Code != 0 {
		t.Fatalf("exit %v", e)
	}
	_ = c.Release()
	waitFor(t, 5*time.Second, "the last lines written", func() bool {
		b, _ := os.ReadFile(log)
		return bytes.HasSuffix(b, []byte("line 1999\n"))
	})
	var all []byte
	for _, p := range []string{keeper.RotatedPath(log, 3), keeper.RotatedPath(log, 2), keeper.RotatedPath(log, 1), log} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1000 || len(b) == 0 || b[len(b)-1] != '\n' {
			t.Errorf("%s: %d bytes, last %q: want at most 1000 ending a line", filepath.Base(p), len(b), b[len(b)-1:])
		}
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want 0640", filepath.Base(p), fi.Mode().Perm())
		}
		all = append(all, b...)
	}
	if _, err := os.Stat(keeper.RotatedPath(log, 4)); !os.IsNotExist(err) {
		t.Errorf("worker.log.4 kept: %v", err)
	}
	// What is kept is the end of the output, whole and in order.
	lines := strings.Split(strings.TrimSuffix(string(all), "\n"), "\n")
	first := 2000 - len(lines)
	for i, l := range lines {
		if want := fmt.Sprintf("line %04d", first+i); l != want {
			t.Fatalf("line %d is %q, want %q", i, l, want)
		}
	}
	if len(lines) < 300 {
		t.Fatalf("kept %d lines, want about 4 files' worth", len(lines))
	}
}

// A supervisor that goes and another that adopts the keeper change
// nothing in the log: every line once, in order.
func TestOutputOutlivesItsSupervisor(t *testing.T) {
	dir := t.TempDir()
	c, log := keepOutput(t, dir, `i=0; while [ $i -lt 50 ]; do echo "n $i"; i=$((i+1)); sleep 0.02; done`, 1<<20, 2)
	c.Close() // the supervisor stops while the worker prints
	k := &kept{t: t, socket: filepath.Join(dir, "k.sock")}
	again := k.dial()
	if e := exitOf(t, again); e.Code == nil || *e.Code != 0 {
		t.Fatalf("exit %v", e)
	}
	_ = again.Release()
	waitFor(t, 5*time.Second, "50 lines", func() bool {
		b, _ := os.ReadFile(log)
		return bytes.Count(b, []byte("\n")) >= 50
	})
	b, _ := os.ReadFile(log)
	var want strings.Builder
	for i := range 50 {
		fmt.Fprintf(&want, "n %d\n", i)
	}
	if string(b) != want.String() {
		t.Fatalf("log:\n%s\nwant every line once, in order", b)
	}
}

// A symlink where the log goes is refused: the worker does not start.
func TestOutputRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "worker.log")); err != nil {
		t.Fatal(err)
	}
	own, _ := os.Create(filepath.Join(dir, "keeper.log"))
	defer own.Close()
	l := keeper.Launch{Path: "/bin/sh", Argv: []string{"sh", "-c", "echo hi"}, Dir: dir,
		Socket: filepath.Join(dir, "k.sock"), BoundMs: 1000,
		Output: &keeper.Output{Path: filepath.Join(dir, "worker.log"), MaxBytes: 100, GID: -1, Mode: 0o640}}
	if p, err := keeper.Start(os.Args[0], l, nil, own); err == nil {
		_ = p.Kill()
		_, _ = p.Wait()
		t.Fatal("started with a symlink for its log")
	} else if !strings.Contains(err.Error(), "worker's log") {
		t.Fatalf("error %v, want one about the worker's log", err)
	}
}

// The worker's exit is reported only once its output is written: the
// supervisor starts the next run's keeper on the same log as soon as it
// hears it, and two writers would rotate the same files. A process that
// left the worker's group holds its pipe a while and writes last.
func TestExitIsReportedAfterTheOutputIsWritten(t *testing.T) {
	dir := t.TempDir()
	c, log := keepOutput(t, dir, `echo first; setsid sh -c 'touch left; sleep 0.5; echo last' &
		while [ ! -e left ]; do sleep 0.01; done; exit 0`, 1<<20, 1)
	if e := exitOf(t, c); e.Code == nil || *e.Code != 0 {
		t.Fatalf("exit %v", e)
	}
	if b, _ := os.ReadFile(log); string(b) != "first\nlast\n" {
		t.Fatalf("when the exit came the log held %q, want all of the output", b)
	}
	_ = c.Release()
}

// A line the supervisor hands the keeper (Note) goes into the log at a
// line's end, never inside a line the worker is writing, and counts
// towards the rotation like the worker's own.
func TestNoteIsWrittenAtALineEnd(t *testing.T) {
	dir := t.TempDir()
	// The worker writes half a line, waits for the note to be sent,
	// then ends the line and writes one more.
	c, log := keepOutput(t, dir, `printf 'half'; while [ ! -e go ]; do sleep 0.01; done; printf ' whole\n'; echo next`, 1<<20, 1)
	waitFor(t, 5*time.Second, "the half line", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "half"
	})
	if err := c.Note("[supervisor] the worker reported an error: bad\ntuple"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if e := exitOf(t, c); e.Code == nil || *e.Code != 0 {
		t.Fatalf("exit %v", e)
	}
	if err := c.Note("[supervisor] after the end"); err != nil {
		t.Fatal(err)
	}
	_ = c.Release()
	want := "half whole\n[supervisor] the worker reported an error: bad tuple\nnext\n[supervisor] after the end\n"
	waitFor(t, 5*time.Second, "the notes written", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == want
	})
}

// Notes count towards the rotation: a log of notes alone rotates at its
// size as the worker's output does.
func TestNotesCountTowardsTheRotation(t *testing.T) {
	dir := t.TempDir()
	c, log := keepOutput(t, dir, `sleep 30`, 100, 2)
	for i := range 10 {
		if err := c.Note(fmt.Sprintf("note %02d %s", i, strings.Repeat("n", 30))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the notes rotated", func() bool {
		_, err := os.Stat(keeper.RotatedPath(log, 2))
		b, _ := os.ReadFile(log)
		return err == nil && strings.Contains(string(b), "note 09")
	})
	for _, p := range []string{log, keeper.RotatedPath(log, 1), keeper.RotatedPath(log, 2)} {
		if fi, err := os.Stat(p); err != nil || fi.Size() > 100 {
			t.Errorf("%s: %v, %d bytes; want at most 100", filepath.Base(p), err, fi.Size())
		}
	}
}

// A note is one line of at most MaxNote bytes, whatever it holds: the
// longest, of the characters JSON escapes most, still fits a request.
func TestALongNoteIsCutToOneLine(t *testing.T) {
	dir := t.TempDir()
	c, log := keepOutput(t, dir, `sleep 30`, 1<<20, 1)
	if err := c.Note(strings.Repeat("<\x01", 2000)); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("<\x01", keeper.MaxNote/2) + "\n"
	waitFor(t, 5*time.Second, "the note written", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == want
	})
}
