package nimbus

import (
	"log/slog"
	"sort"

	"github.com/nimbusha/nimbus/assign"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// shortfall is what a round's decision leaves unplaced: per topology, the
// slots it lacks (missingSlots, the same rule the read path shows).
type shortfall struct {
	missing map[string]int32 // topologies lacking slots, and how many
	total   int32            // slots lacking, summed
	free    int              // live slots the decision leaves free
}

// shortfallOf measures next, the decision for storms over the live
// supervisors sups.
func shortfallOf(storms map[string]*clusterv1.StormBase, next map[string]assign.Assignment, sups []assign.Supervisor) shortfall {
	used := map[assign.Slot]bool{}
	sf := shortfall{missing: map[string]int32{}}
	for id, a := range next {
		slots := map[assign.Slot]bool{}
		for _, s := range a {
			slots[s], used[s] = true, true
		}
		base := storms[id]
		if base == nil {
			continue
		}
		if n := missingSlots(base, int32(len(slots))); n > 0 {
			sf.missing[id] = n
			sf.total += n
		}
	}
	live := map[assign.Slot]bool{}
	for _, s := range sups {
		for _, p := range s.Ports {
			live[assign.Slot{SupervisorID: s.ID, Port: p}] = true
		}
	}
	for s := range live {
		if !used[s] {
			sf.free++
		}
	}
	return sf
}

// noteShortfall exports sf and logs, once per spell and term, each
// topology that starts lacking slots and each that stops.
func (sch *scheduler) noteShortfall(sf shortfall, storms map[string]*clusterv1.StormBase, m *metrics, log *slog.Logger) {
	if m != nil {
		m.unplacedSlots.Set(float64(sf.total))
		m.unplacedTopologies.Set(float64(len(sf.missing)))
	}
	ids := make([]string, 0, len(sf.missing))
	for id := range sf.missing {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !sch.short[id] {
			sch.short[id] = true
			log.Warn("topology cannot be fully placed: not enough free slots; it keeps fewer workers until a rebalance",
				"topology", id, "name", storms[id].GetName(), "missing_slots", sf.missing[id],
				"num_workers", storms[id].GetNumWorkers(), "free_slots", sf.free)
		}
	}
	for id := range sch.short {
		if _, still := sf.missing[id]; still {
			continue
		}
		delete(sch.short, id)
		if base := storms[id]; base != nil {
			log.Info("topology placed in full", "topology", id, "name", base.GetName())
		}
	}
}
