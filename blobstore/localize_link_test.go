package blobstore

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLinkSwitchIsAtomic: a reader looping on the link while it is
// switched back and forth between two versions always reads one whole
// version, never a mix and never nothing.
func TestLinkSwitchIsAtomic(t *testing.T) {
	root := t.TempDir()
	versions := make([]string, 2)
	contents := [][]byte{bytes.Repeat([]byte("A"), 256<<10), bytes.Repeat([]byte("B"), 256<<10)}
	for i := range versions {
		versions[i] = filepath.Join(root, "v"+string(rune('1'+i)))
		if err := os.Mkdir(versions[i], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(versions[i], "data"), contents[i], 0o444); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(root, "worker")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Link(work, "model", versions[0]); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, mixes, fails atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				b, err := os.ReadFile(filepath.Join(work, "model", "data"))
				reads.Add(1)
				switch {
				case err != nil:
					fails.Add(1)
				case !bytes.Equal(b, contents[0]) && !bytes.Equal(b, contents[1]):
					mixes.Add(1)
				}
			}
		})
	}
	for i := range 400 {
		if err := Link(work, "model", versions[(i+1)%2]); err != nil {
			t.Fatal(err)
		}
	}
	for reads.Load() < 100 { // readers ran during the switches, and a while after
	}
	stop.Store(true)
	wg.Wait()
	if mixes.Load() != 0 || fails.Load() != 0 {
		t.Fatalf("%d reads: %d saw a mix, %d failed", reads.Load(), mixes.Load(), fails.Load())
	}
	if target, _ := os.Readlink(filepath.Join(work, "model")); target != versions[0] {
		t.Fatalf("the link ends at %s, want %s", target, versions[0])
	}
	entries, _ := os.ReadDir(work)
	if len(entries) != 1 {
		t.Fatalf("the worker's directory holds %d entries, want the link only", len(entries))
	}
}

func TestLinkRefusesToReplaceAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("active\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Link(dir, "status", "/elsewhere"); err == nil {
		t.Fatal("a file was replaced by a link")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "status")); string(b) != "active\n" {
		t.Fatalf("the file now holds %q", b)
	}
}
