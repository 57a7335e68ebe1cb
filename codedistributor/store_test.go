package codedistributor

import (
	"crypto/sha256"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nimbusha/nimbus/internal/notify"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A corruption that keeps a file's size and modification time goes
// unseen by Verify, which trusts its stamps, until a reader reports it:
// then the store hashes again, finds it, and says so on Reported. Removing
// a bundle announces a change only when there was one to remove.
func TestReportedCorruptionIsVerifiedAgain(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const id = "wc-1-1400000000"
	content := []byte("the artifact's bytes")
	sum := sha256.Sum256(content)
	tmp, err := s.NewTemp()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ArtifactFile), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(tmp, id, &clusterv1.CodeMeta{TopologyId: id,
		Files: []*clusterv1.CodeFile{{Name: ArtifactFile, Size: int64(len(content)), Sha256: sum[:]}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(id, nil); err != nil {
		t.Fatal(err)
	}

	// Same size, same mtime, other bytes.
	path := filepath.Join(s.Dir(id), ArtifactFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	rotten := append([]byte{}, content...)
	rotten[0] ^= 0xff
	if err := os.WriteFile(path, rotten, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(id, nil); err != nil {
		t.Fatalf("before a report Verify trusts its stamps, got %v", err)
	}

	reported := s.Reported()
	s.ReportCorrupt(id)
	if !notify.Closed(reported) {
		t.Fatal("Reported not announced")
	}
	if err := s.Verify(id, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("after the report: %v, want ErrCorrupt", err)
	}

	changed := s.Changed()
	if err := s.Remove("other-1-1"); err != nil || notify.Closed(changed) {
		t.Fatalf("removing what is not there: err %v, change announced %v", err, notify.Closed(changed))
	}
	if err := s.Remove(id); err != nil || !notify.Closed(changed) {
		t.Fatalf("removing a bundle: err %v, change announced %v", err, notify.Closed(changed))
	}
}

// Verify's fast path (no read when nothing changed) still notices a file
// or a meta removed, a file rewritten, and a digest that differs.
func TestVerifyNoticesChangesWithoutReading(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	install := func(id string, content []byte) []byte {
		t.Helper()
		sum := sha256.Sum256(content)
		tmp, err := s.NewTemp()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, ArtifactFile), content, 0o644); err != nil {
			t.Fatal(err)
		}
		digest, err := s.Install(tmp, id, &clusterv1.CodeMeta{TopologyId: id,
			Files: []*clusterv1.CodeFile{{Name: ArtifactFile, Size: int64(len(content)), Sha256: sum[:]}}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second takes the fast path
			if err := s.Verify(id, digest); err != nil {
				t.Fatal(err)
			}
		}
		return digest
	}
	for _, tc := range []struct {
		name   string
		change func(dir string) error
		want   error
	}{
		{"artifact removed", func(dir string) error { return os.Remove(filepath.Join(dir, ArtifactFile)) }, ErrCorrupt},
		{"artifact rewritten", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ArtifactFile), []byte("longer, other bytes"), 0o644)
		}, ErrCorrupt},
		{"meta removed", func(dir string) error { return os.Remove(filepath.Join(dir, metaFile)) }, ErrNotHeld},
		{"bundle removed", os.RemoveAll, ErrNotHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "wc-1-1400000000"
			digest := install(id, []byte("the artifact's bytes"))
			if err := tc.change(s.Dir(id)); err != nil {
				t.Fatal(err)
			}
			if err := s.Verify(id, digest); !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("other digest", func(t *testing.T) {
		id := "wc-2-1400000000"
		install(id, []byte("code"))
		if err := s.Verify(id, []byte("another digest")); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("Verify with another digest: %v, want ErrNotHeld", err)
		}
	})
}

// IDs follows the store's own installs and removals without reading the
// directory, and still finds what changed behind its back.
func TestIDsFollowsTheStoreAndWhatElseChangesIt(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	install := func(id string) {
		t.Helper()
		tmp, err := s.NewTemp()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Install(tmp, id, &clusterv1.CodeMeta{TopologyId: id}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want ...string) {
		t.Helper()
		ids, err := s.IDs()
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(ids)); !slices.Equal(got, want) {
			t.Fatalf("IDs = %v, want %v", got, want)
		}
	}
	tampers := func() uint64 {
		t.Helper()
		n, err := s.Tampers()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	expect()
	before := tampers()
	install("a-1-1")
	install("b-1-1")
	expect("a-1-1", "b-1-1")
	if n := tampers(); n != before {
		t.Fatalf("the store's own installs counted as tampering: %d, was %d", n, before)
	}
	if err := os.RemoveAll(s.Dir("a-1-1")); err != nil { // a wiped disk
		t.Fatal(err)
	}
	expect("b-1-1") // another lister sees it first
	if n := tampers(); n != before+1 {
		t.Fatalf("a directory removed behind the store's back: Tampers %d, want %d, whoever listed first", n, before+1)
	}
	if err := os.Mkdir(s.Dir("c-1-1"), 0o755); err != nil { // someone else's
		t.Fatal(err)
	}
	expect("b-1-1", "c-1-1")
	if err := s.Remove("b-1-1"); err != nil {
		t.Fatal(err)
	}
	expect("c-1-1")
}
