package bench

import (
	"testing"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// TestMain builds the daemons without the race detector, which would
// slow them down, and without cgo; only benchmarks build them.
func TestMain(m *testing.M) { testcluster.Main(m, testcluster.WithRace(false)) }

// discard drops a Cluster's progress lines: a benchmark's log is always
// printed.
func discard(string, ...any) {}
