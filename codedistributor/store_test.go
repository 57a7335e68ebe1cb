package codedistributor

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
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
