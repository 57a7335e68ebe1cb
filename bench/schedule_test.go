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

// placedAll returns a Placer holding scheduleInput, every topology placed
// and adopted, as a leader's is between rounds.
func placedAll(b *testing.B) (*assign.Placer, []assign.Topology) {
	topos, sups := scheduleInput()
	p := assign.NewPlacer()
	for _, s := range sups {
		p.SetSupervisor(s)
	}
	for _, t := range topos[:len(topos)-1] {
		p.SetTopology(t, nil)
	}
	for _, id := range p.Place() {
		p.Adopt(id)
	}
	return p, topos
}

// BenchmarkPlacerOneNewTopology is a leader's round after a submission,
// with the Placer it keeps between rounds: place the new topology (and,
// to start the next iteration as this one did, remove it again).
func BenchmarkPlacerOneNewTopology(b *testing.B) {
	p, topos := placedAll(b)
	last := topos[len(topos)-1]
	b.ReportAllocs()
	for b.Loop() {
		p.SetTopology(last, nil)
		if decided := p.Place(); len(decided) != 1 || len(p.Result(last.ID)) == 0 {
			b.Fatalf("decided %v", decided)
		}
		p.Adopt(last.ID)
		p.RemoveTopology(last.ID)
		p.Place()
	}
}

// BenchmarkPlacerSteady is a round when nothing changed.
func BenchmarkPlacerSteady(b *testing.B) {
	p, _ := placedAll(b)
	b.ReportAllocs()
	for b.Loop() {
		if decided := p.Place(); len(decided) != 0 {
			b.Fatalf("decided %v", decided)
		}
	}
}
