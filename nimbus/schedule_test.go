package nimbus

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// An assignment over the node budget is never written, and said once
// until it fits again.
func TestOversizeAssignmentIsNotWrittenAndLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	sch := newScheduler()
	big := assignmentWrite{id: "big-1-1", out: &clusterv1.Assignment{SupervisorHosts: map[string]string{"s": strings.Repeat("h", 2000)}}}
	budget := proto.Size(big.out) - 1
	for range 3 {
		if sch.fits(big, budget, log) {
			t.Fatal("an assignment over the budget fits")
		}
	}
	if n := strings.Count(logs.String(), "larger than a ZooKeeper node"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
	if !sch.fits(big, budget+1, log) || sch.oversize[big.id] {
		t.Fatal("an assignment within the budget does not fit, or stays marked")
	}
}
