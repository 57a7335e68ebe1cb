package nimbus

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/assign"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Two topologies of two workers each on three slots: the second lacks one
// slot, logged once however many rounds find it short, and again "placed
// in full" once, when a slot comes.
func TestShortfallIsExportedAndLoggedOncePerSpell(t *testing.T) {
	active := clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE
	storms := map[string]*clusterv1.StormBase{
		"a-1": {Name: "a", Status: active, NumWorkers: 2, ComponentExecutors: map[string]int32{"s": 2}},
		"b-1": {Name: "b", Status: active, NumWorkers: 2, ComponentExecutors: map[string]int32{"s": 2}},
	}
	tops, _, _ := topologies(storms, nil)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
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

	three := []assign.Supervisor{{ID: "s1", Ports: []int32{1, 2, 3}}}
	var next map[string]assign.Assignment
	for range 3 {
		next = assign.Schedule(tops, three, next)
		sf := shortfallOf(storms, next, three)
		if sf.total != 1 || sf.missing["b-1"] != 1 || sf.free != 0 {
			t.Fatalf("shortfall = %+v", sf)
		}
		sch.noteShortfall(sf, storms, m, log)
	}
	if n := strings.Count(logs.String(), "cannot be fully placed"); n != 1 {
		t.Fatalf("%d warnings:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "missing_slots=1") || !strings.Contains(logs.String(), "name=b") {
		t.Fatalf("warning lacks the count or the name:\n%s", logs.String())
	}
	if got := gauge("nimbus_unplaced_slots"); got != 1 {
		t.Fatalf("nimbus_unplaced_slots = %v", got)
	}
	if got := gauge("nimbus_unplaced_topologies"); got != 1 {
		t.Fatalf("nimbus_unplaced_topologies = %v", got)
	}

	// A rebalance places it afresh (its assignment deleted) on four slots.
	four := []assign.Supervisor{{ID: "s1", Ports: []int32{1, 2, 3, 4}}}
	delete(next, "b-1")
	next = assign.Schedule(tops, four, next)
	sch.noteShortfall(shortfallOf(storms, next, four), storms, m, log)
	if got := gauge("nimbus_unplaced_slots"); got != 0 {
		t.Fatalf("nimbus_unplaced_slots = %v after placing", got)
	}
	if n := strings.Count(logs.String(), "placed in full"); n != 1 {
		t.Fatalf("%d placed lines:\n%s", n, logs.String())
	}
}
