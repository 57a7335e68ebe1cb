package leading

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Two topologies of two workers each on three slots: the second lacks one
// slot, logged once however many rounds find it short (with no slot left,
// as the line says), and again "placed in full" once, when a slot comes:
// it grows into it by itself.
func TestShortfallIsExportedAndLoggedOncePerSpell(t *testing.T) {
	active := clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE
	storms := map[string]*clusterv1.StormBase{
		"a-1": {Name: "a", Status: active, NumWorkers: 2, ComponentExecutors: map[string]int32{"s": 2}},
		"b-1": {Name: "b", Status: active, NumWorkers: 2, ComponentExecutors: map[string]int32{"s": 2}},
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	gauge := func(name string) float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name && len(f.GetMetric()) == 1 {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	sch := newScheduler()
	now := time.Now()
	round := func(ports ...int32) {
		sch.observeSupervisors(fixed(map[string]*clusterv1.SupervisorInfo{"s1": {Host: "h", SlotPorts: ports, LastHeartbeatUnixMs: int64(len(ports))}}),
			now, time.Minute)
		sch.observeTopologies(fixed(storms), fixed[*clusterv1.Assignment](nil), fixed[*clusterv1.LostMark](nil))
		decided := sch.placer.Place()
		for _, id := range decided {
			sch.placer.Adopt(id)
		}
		sch.noteShortfall(decided, m, log)
	}

	for range 3 {
		round(1, 2, 3)
	}
	if n := strings.Count(logs.String(), "topology lacks workers"); n != 1 {
		t.Fatalf("%d warnings:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "missing_slots=1") || !strings.Contains(logs.String(), "name=b") ||
		!strings.Contains(logs.String(), "free_slots_left=0") {
		t.Fatalf("warning lacks the count or the name:\n%s", logs.String())
	}
	if got := gauge("nimbus_unplaced_slots"); got != 1 {
		t.Fatalf("nimbus_unplaced_slots = %v", got)
	}
	if got := gauge("nimbus_unplaced_topologies"); got != 1 {
		t.Fatalf("nimbus_unplaced_topologies = %v", got)
	}

	// A fourth slot comes: b grows into it within the round, no rebalance.
	round(1, 2, 3, 4)
	if got := gauge("nimbus_unplaced_slots"); got != 0 {
		t.Fatalf("nimbus_unplaced_slots = %v after placing", got)
	}
	if n := strings.Count(logs.String(), "placed in full"); n != 1 {
		t.Fatalf("%d placed lines:\n%s", n, logs.String())
	}
}
