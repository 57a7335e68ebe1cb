package conformance

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nimbusha/nimbus/codedistributor"
)

// Checks of what a node installed, and the damage the suite does on disk.

func (e *Env) expectHolds(n *Node, code codedistributor.Code, data []byte) {
	e.t.Helper()
	if err := n.Store.Verify(code.TopologyID, code.Digest); err != nil {
		e.t.Fatalf("%s: %v", n.Addr, err)
	}
	got, err := os.ReadFile(filepath.Join(n.Store.Dir(code.TopologyID), codedistributor.ArtifactFile))
	if err != nil || !bytes.Equal(got, data) {
		e.t.Fatalf("%s: artifact differs from what was published (%v)", n.Addr, err)
	}
}

func (e *Env) expectNothing(n *Node, code codedistributor.Code) {
	e.t.Helper()
	if _, err := os.Stat(n.Store.Dir(code.TopologyID)); !errors.Is(err, os.ErrNotExist) {
		e.t.Fatalf("%s installed %s", n.Addr, code.TopologyID)
	}
}

// expectNothingOrIntact: whatever happened, nothing corrupt was installed.
func (e *Env) expectNothingOrIntact(n *Node, code codedistributor.Code, data []byte) {
	e.t.Helper()
	if _, err := os.Stat(n.Store.Dir(code.TopologyID)); err == nil {
		e.expectHolds(n, code, data)
	}
}

func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
