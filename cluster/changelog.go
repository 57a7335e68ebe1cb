package cluster

import (
	"maps"
	"slices"
	"sync"
)

// changeLog keeps, for a DirCache, which children each of its recent
// publishes changed, so that a reader can ask what changed since the state
// it last looked at and do work proportional to that (DirCache.Changes).
// It is bounded: by maxLogged publishes, and by names a few times the
// directory's size, so a flood of changes costs readers a full look, never
// unbounded memory.
type changeLog struct {
	mu      sync.Mutex
	entries []logEntry // oldest first
	names   int        // summed over entries
}

type logEntry struct {
	gen   uint64
	names []string
	reset bool // anything may have changed
}

const (
	maxLogged     = 128
	minLoggedSize = 1024 // names kept at least, however small the directory
)

// record notes what the publish of gen changed; size is the directory's
// size then.
func (l *changeLog) record(gen uint64, changed map[string]bool, reset bool, size int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := logEntry{gen: gen, names: slices.Collect(maps.Keys(changed)), reset: reset}
	l.entries = append(l.entries, e)
	l.names += len(e.names)
	for len(l.entries) > 1 && (len(l.entries) > maxLogged || l.names > max(4*size, minLoggedSize)) {
		l.names -= len(l.entries[0].names)
		l.entries = slices.Delete(l.entries, 0, 1)
	}
}

// since returns the names changed by the publishes after since up to gen,
// or false when the log does not reach back to since or a reset is among
// them.
func (l *changeLog) since(since, gen uint64) (map[string]bool, bool) {
	if since == gen {
		return nil, true
	}
	if since > gen {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == 0 || l.entries[0].gen > since+1 {
		return nil, false // forgotten
	}
	out := map[string]bool{}
	for _, e := range l.entries {
		if e.gen <= since || e.gen > gen {
			continue
		}
		if e.reset {
			return nil, false
		}
		for _, n := range e.names {
			out[n] = true
		}
	}
	return out, true
}
