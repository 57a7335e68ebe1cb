package clusterid

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func TestMemory(t *testing.T) {
	dir := t.TempDir()
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A cluster not named yet, never seen named: fine.
	if err := m.Check(nil); err != nil {
		t.Fatalf("a new cluster: %v", err)
	}
	// The first id seen is remembered, on disk.
	if err := m.Check(&clusterv1.ClusterVersion{ClusterId: "a"}); err != nil || m.ID() != "a" {
		t.Fatalf("first sight: %v, remembered %q", err, m.ID())
	}
	again, err := Open(dir)
	if err != nil || again.ID() != "a" {
		t.Fatalf("after a restart: %q, %v", again.ID(), err)
	}
	if err := again.Check(&clusterv1.ClusterVersion{ClusterId: "a"}); err != nil {
		t.Fatalf("the same cluster: %v", err)
	}
	// Gone: an outage, naming the file to remove for a new cluster.
	err = again.Check(nil)
	if !errors.Is(err, ErrOutage) || !strings.Contains(err.Error(), "restore a snapshot") || !strings.Contains(err.Error(), filepath.Join(dir, fileName)) {
		t.Fatalf("a wiped root: %v", err)
	}
	// Another cluster: an outage too, and nothing remembered changes.
	if err := again.Check(&clusterv1.ClusterVersion{ClusterId: "b"}); !errors.Is(err, ErrOutage) || !strings.Contains(err.Error(), "holds cluster b") {
		t.Fatalf("another cluster: %v", err)
	}
	if again.ID() != "a" {
		t.Fatalf("remembered %q after seeing another cluster", again.ID())
	}
}

func TestOpenUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, fileName), 0o755); err != nil { // a directory where the file goes
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("an unreadable memory opened")
	}
}
