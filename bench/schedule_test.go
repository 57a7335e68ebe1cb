package bench

import (
	"fmt"
	"testing"

	"github.com/nimbusha/nimbus/assign"
)

// scheduleCluster is the size of docs/ARCHITECTURE.md section 6's target: supervisors
// with four slots each, and topologies of four workers and 10 to 20
// executors, enough to fill every slot.
const (
	scheduleSupervisors = 1000
	scheduleTopologies  = 1000
)

func scheduleInput() ([]assign.Topology, []assign.Supervisor) {
	sups := make([]assign.Supervisor, scheduleSupervisors)
	for i := range sups {
		sups[i] = assign.Supervisor{ID: fmt.Sprintf("sup-%04d", i), Ports: []int32{6700, 6701, 6702, 6703}}
	}
	topos := make([]assign.Topology, scheduleTopologies)
	for i := range topos {
		n := int32(10 + i%11)
		topos[i] = assign.Topology{
			ID:         fmt.Sprintf("topo-%04d", i),
			NumWorkers: 4,
			Executors:  assign.Executors(map[string]int32{"spout": 2, "split": n/2 - 1, "count": n - n/2 - 1}),
		}
	}
	return topos, sups
}

// BenchmarkScheduleFull schedules every topology from empty, as a new
// leader with no assignments would.
func BenchmarkScheduleFull(b *testing.B) {
	topos, sups := scheduleInput()
	b.ReportAllocs()
	for b.Loop() {
		assign.Schedule(topos, sups, nil)
	}
}

// BenchmarkScheduleOneNewTopology schedules a submission: all topologies
// but the last are placed already, the last is new.
func BenchmarkScheduleOneNewTopology(b *testing.B) {
	topos, sups := scheduleInput()
	current := assign.Schedule(topos[:len(topos)-1], sups, nil)
	if got := assign.Schedule(topos, sups, current); len(got[topos[len(topos)-1].ID]) == 0 {
		b.Fatal("new topology not placed")
	}
	b.ReportAllocs()
	for b.Loop() {
		assign.Schedule(topos, sups, current)
	}
}

// BenchmarkScheduleSteady is the monitor period's call when nothing
// changed.
func BenchmarkScheduleSteady(b *testing.B) {
	topos, sups := scheduleInput()
	current := assign.Schedule(topos, sups, nil)
	b.ReportAllocs()
	for b.Loop() {
		assign.Schedule(topos, sups, current)
	}
}
