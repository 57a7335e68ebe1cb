package supervisor

import (
	"maps"
	"testing"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// A logger keeps its target level until its timeout, then takes its reset
// level or loses its entry; the next change is the earliest timeout still
// ahead.
func TestLevelsAt(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	entries := map[string]*clusterv1.LoggerLevel{
		"ROOT":        {TargetLevel: "WARN"},
		"a.soon":      {TargetLevel: "DEBUG", TimeoutUnixMs: ms(10 * time.Second)},
		"a.later":     {TargetLevel: "TRACE", ResetLevel: "INFO", TimeoutUnixMs: ms(time.Minute)},
		"b.ended":     {TargetLevel: "DEBUG", ResetLevel: "ERROR", TimeoutUnixMs: ms(-time.Second)},
		"b.endedbare": {TargetLevel: "DEBUG", TimeoutUnixMs: ms(0)},
		"c.odd":       {TargetLevel: " debug "}, // as a hand-written node may spell it
		"c.bad":       {TargetLevel: "LOUD"},    // left out, the others kept
		"c bad name":  {TargetLevel: "DEBUG"},   // likewise
	}
	levels, next := levelsAt(entries, now)
	want := workerproto.LogLevels{"ROOT": "WARN", "a.soon": "DEBUG", "a.later": "TRACE", "b.ended": "ERROR", "c.odd": "DEBUG"}
	if !maps.Equal(levels, want) || !next.Equal(now.Add(10*time.Second)) {
		t.Errorf("at now: %v, next %v; want %v, next %v", levels, next, want, now.Add(10*time.Second))
	}
	levels, next = levelsAt(entries, now.Add(2*time.Minute))
	want = workerproto.LogLevels{"ROOT": "WARN", "a.later": "INFO", "b.ended": "ERROR", "c.odd": "DEBUG"}
	if !maps.Equal(levels, want) || !next.IsZero() {
		t.Errorf("two minutes on: %v, next %v; want %v and no next change", levels, next, want)
	}
}
