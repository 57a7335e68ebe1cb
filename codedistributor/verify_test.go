package codedistributor

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A downloaded file is kept only when it is exactly what the meta lists;
// too many bytes fail the write at once, a wrong hash fails Finish, and
// either way nothing is left to install.
func TestVerifiedFileKeepsOnlyWhatTheMetaLists(t *testing.T) {
	good := []byte("the artifact")
	sum := sha256.Sum256(good)
	meta := &clusterv1.CodeFile{Name: ArtifactFile, Size: int64(len(good)), Sha256: sum[:]}
	for _, c := range []struct {
		name    string
		chunks  [][]byte
		corrupt bool
	}{
		{"exact, in two chunks", [][]byte{good[:3], good[3:]}, false},
		{"one byte more", [][]byte{good, []byte("!")}, true},
		{"short", [][]byte{good[:5]}, true},
		{"same size, other bytes", [][]byte{[]byte("THE artifact")}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			v, err := CreateVerified(dir, meta, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer v.Abort()
			for _, chunk := range c.chunks {
				if _, err = v.Write(chunk); err != nil {
					break
				}
			}
			if err == nil {
				err = v.Finish()
			}
			v.Abort()
			_, statErr := os.Stat(filepath.Join(dir, ArtifactFile))
			switch {
			case c.corrupt && !errors.Is(err, ErrCorrupt):
				t.Fatalf("err %v, want ErrCorrupt", err)
			case c.corrupt && statErr == nil:
				t.Fatal("a corrupt download was left in place")
			case !c.corrupt && (err != nil || statErr != nil):
				t.Fatalf("a good download: err %v, stat %v", err, statErr)
			}
		})
	}
}
