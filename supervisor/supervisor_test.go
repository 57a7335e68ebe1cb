package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func TestIDSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first, err := loadID(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := loadID(dir)
	if err != nil || again != first {
		t.Fatalf("second load: %q, %v; want %q", again, err, first)
	}
	if err := os.WriteFile(filepath.Join(dir, "supervisor-id"), []byte("a/b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadID(dir); err == nil {
		t.Fatal("a corrupt id file was accepted")
	}
}

func TestFormatExecutors(t *testing.T) {
	got := formatExecutors([]*clusterv1.Executor{
		{ComponentId: "split", TaskStart: 3, TaskEnd: 3},
		{ComponentId: "count", TaskStart: 5, TaskEnd: 6},
		{ComponentId: "split", TaskStart: 2, TaskEnd: 2},
	})
	if want := "count[5-6],split[2-2],split[3-3]"; got != want {
		t.Fatalf("formatExecutors = %q, want %q", got, want)
	}
}
