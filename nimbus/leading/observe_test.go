package leading

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A supervisor counts as live while this leader sees its heartbeat stamp
// change within the timeout, by the leader's own clock; a silent one is
// dropped without a look at the others, and comes back when it beats.
func TestObserveSupervisorsByTheLeadersClock(t *testing.T) {
	sch := newScheduler()
	t0 := time.Unix(1000, 0)
	timeout := 10 * time.Second
	info := func(beat int64) *clusterv1.SupervisorInfo {
		// Its own clock is far off: only that the stamp changes counts.
		return &clusterv1.SupervisorInfo{Host: "h", SlotPorts: []int32{6700}, LastHeartbeatUnixMs: beat}
	}
	quiet := info(1)
	steps := []struct {
		at   time.Duration
		sups map[string]*clusterv1.SupervisorInfo
		live []string
	}{
		{0, map[string]*clusterv1.SupervisorInfo{"a": info(5), "b": quiet}, []string{"a", "b"}},
		{9 * time.Second, map[string]*clusterv1.SupervisorInfo{"a": info(6), "b": quiet}, []string{"a", "b"}},
		{11 * time.Second, map[string]*clusterv1.SupervisorInfo{"a": info(6), "b": quiet}, []string{"a"}}, // b silent 11 s
		{15 * time.Second, map[string]*clusterv1.SupervisorInfo{"a": info(7), "b": info(2)}, []string{"a", "b"}},
		{20 * time.Second, map[string]*clusterv1.SupervisorInfo{"a": info(7)}, []string{"a"}}, // b unregistered
		{26 * time.Second, map[string]*clusterv1.SupervisorInfo{"a": info(7), "c": nil}, nil}, // a silent 11 s; c undecodable
	}
	for i, s := range steps {
		sch.observeSupervisors(fixed(s.sups), t0.Add(s.at), timeout)
		var live []string
		for id := range sch.live {
			live = append(live, id)
		}
		slices.Sort(live)
		if !slices.Equal(live, s.live) || sch.placer.Supervisors() != len(s.live) {
			t.Fatalf("step %d (%v): live %v (placer holds %d), want %v", i, s.at, live, sch.placer.Supervisors(), s.live)
		}
	}
}

// A round after one submission decides that topology alone: what the
// cache shows unchanged costs nothing but a comparison.
func TestObserveTopologiesTellsOnlyWhatChanged(t *testing.T) {
	sch := newScheduler()
	now := time.Now()
	sups := map[string]*clusterv1.SupervisorInfo{}
	for i := range 50 {
		sups[fmt.Sprintf("s%02d", i)] = &clusterv1.SupervisorInfo{Host: "h", SlotPorts: []int32{1, 2, 3, 4}, LastHeartbeatUnixMs: 1}
	}
	storms := map[string]*clusterv1.StormBase{}
	for i := range 100 {
		storms[fmt.Sprintf("t%03d-1-1", i)] = &clusterv1.StormBase{Name: "t", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
			NumWorkers: 1, ComponentExecutors: map[string]int32{"c": 2}}
	}
	round := func() []string {
		sch.observeSupervisors(fixed(sups), now, time.Minute)
		sch.observeTopologies(fixed(storms), fixed[*clusterv1.Assignment](nil), fixed[*clusterv1.LostMark](nil))
		decided := sch.placer.Place()
		for _, id := range decided {
			sch.placer.Adopt(id)
		}
		return decided
	}
	if decided := round(); len(decided) != 100 {
		t.Fatalf("first round decided %d topologies, want all 100", len(decided))
	}
	if decided := round(); len(decided) != 0 {
		t.Fatalf("nothing changed, yet the round decided %v", decided)
	}
	storms["new-1-1"] = &clusterv1.StormBase{Name: "new", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
		NumWorkers: 2, ComponentExecutors: map[string]int32{"c": 2}}
	if decided := round(); !slices.Equal(decided, []string{"new-1-1"}) {
		t.Fatalf("one topology submitted: the round decided %v", decided)
	}
	delete(storms, "t042-1-1")
	if decided := round(); len(decided) != 0 || len(sch.told) != 100 {
		t.Fatalf("one topology removed: the round decided %v and holds %d", decided, len(sch.told))
	}
}

// fixedCache is a cache that holds children and cannot say which changed:
// every round looks at all of them, and the pointers tell what changed.
type fixedCache[M proto.Message] map[string]M

func fixed[M proto.Message](m map[string]M) fixedCache[M] { return fixedCache[M](m) }

func (c fixedCache[M]) Snapshot() map[string]M { return c }

func (c fixedCache[M]) Unreadable() map[string]bool { return nil }

func (c fixedCache[M]) Changes(uint64) (map[string]bool, uint64, bool) { return nil, 0, false }
