package leading

import (
	"log/slog"
	"sort"

	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/nimbus/view"
)

// The shortfall is what the leader's decisions leave unplaced: per
// topology, the slots it lacks (view.MissingSlots, the same rule the read path
// shows). It is kept as rounds decide, topology by topology, and exported
// as nimbus_unplaced_slots and nimbus_unplaced_topologies.

// noteShortfall updates the shortfall of the topologies the round decided,
// exports the sums, and logs, once per spell and term, each topology that
// starts lacking slots and each that stops.
func (sch *scheduler) noteShortfall(decided []string, m *Metrics, log *slog.Logger) {
	var started []string
	for _, id := range decided {
		base := sch.told[id].base
		slots := map[assign.Slot]bool{}
		for _, s := range sch.placer.Result(id) {
			slots[s] = true
		}
		n := view.MissingSlots(base, int32(len(slots)))
		if n > 0 && sch.short[id] == 0 {
			started = append(started, id)
		}
		if n == 0 && sch.short[id] > 0 && base != nil {
			log.Info("topology placed in full", "topology", id, "name", base.GetName())
		}
		sch.setShort(id, n)
	}
	sort.Strings(started)
	for _, id := range started {
		base := sch.told[id].base
		log.Warn("topology lacks workers: every slot is taken; it grows when slots free up",
			"topology", id, "name", base.GetName(), "missing_slots", sch.short[id],
			"num_workers", base.GetNumWorkers(), "free_slots_left", sch.placer.FreeSlots())
	}
	if m != nil {
		m.unplacedSlots.Set(float64(sch.shortTotal))
		m.unplacedTopologies.Set(float64(len(sch.short)))
	}
}

// setShort records that topology id lacks n slots (0: none).
func (sch *scheduler) setShort(id string, n int32) {
	sch.shortTotal += n - sch.short[id]
	if n > 0 {
		sch.short[id] = n
	} else {
		delete(sch.short, id)
	}
}
