package snapshot

import (
	"bytes"
	"errors"
	"testing"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// FuzzVerify: whatever the bytes, Verify answers without panicking, and
// any answer but a whole snapshot is ErrInvalid; a file it accepts reads
// back with the same counts.
func FuzzVerify(f *testing.F) {
	var seed bytes.Buffer
	w := NewWriter(&seed, &clusterv1.SnapshotHeader{Release: "0.2"})
	_ = w.Node("storms/a-1-1", []byte("base"))
	_ = w.File("a-1-1", "spec.pb", bytes.NewReader([]byte("spec")))
	_ = w.Close()
	f.Add(seed.Bytes())
	f.Add(seed.Bytes()[:seed.Len()/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Verify(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Verify: %v, not ErrInvalid", err)
			}
			return
		}
		nodes, files := 0, 0
		if err := Read(bytes.NewReader(data), func(r *clusterv1.SnapshotRecord) error {
			if r.GetNode() != nil {
				nodes++
			} else if r.GetFile() != nil {
				files++
			}
			return nil
		}); err != nil || nodes != c.Nodes || files != c.Files {
			t.Fatalf("Read: %v, %d nodes and %d files, Verify counted %d and %d", err, nodes, files, c.Nodes, c.Files)
		}
	})
}
