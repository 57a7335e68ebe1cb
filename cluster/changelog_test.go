package cluster

import (
	"fmt"
	"testing"
)

// The log forgets its oldest publishes past its bounds, and a reader from
// before them is told so.
func TestChangeLogIsBounded(t *testing.T) {
	var l changeLog
	for gen := uint64(1); gen <= 300; gen++ {
		l.record(gen, map[string]bool{fmt.Sprint(gen): true}, gen == 1, 10)
	}
	if len(l.entries) > maxLogged {
		t.Fatalf("%d entries kept, at most %d", len(l.entries), maxLogged)
	}
	if _, ok := l.since(100, 300); ok {
		t.Fatal("since a forgotten publish: ok")
	}
	names, ok := l.since(290, 300)
	if !ok || len(names) != 10 || !names["291"] || !names["300"] {
		t.Fatalf("since(290, 300) = %v, %v", names, ok)
	}
	if names, ok := l.since(295, 297); !ok || len(names) != 2 {
		t.Fatalf("since(295, 297) = %v, %v: want the two publishes in between", names, ok)
	}
	big := map[string]bool{}
	for i := range 5000 {
		big[fmt.Sprint("x", i)] = true
	}
	l.record(301, big, false, 1000)
	if l.names > 5000 || len(l.entries) != 1 {
		t.Fatalf("after a flood: %d names in %d entries, want only the flood's", l.names, len(l.entries))
	}
}
