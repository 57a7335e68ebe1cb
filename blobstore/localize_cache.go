package blobstore

import (
	"cmp"
	"slices"
)

// versionCache is the bookkeeping of a supervisor's materialized blob
// versions: their sizes, which are in use, and when each was last used.
// Versions in use are never evicted; the others are, least recently used
// first, while together they take more than target bytes. Pure: the
// Localizer removes what evict names.
type versionCache struct {
	target  int64
	clock   uint64 // a use's order; never a time, so tests need none
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	size     int64
	lastUsed uint64
	inUse    bool
}

func newVersionCache(target int64) *versionCache {
	return &versionCache{target: target, entries: map[string]*cacheEntry{}}
}

// add records version id, of size bytes, as just used. lastUsed orders
// versions found on disk at a start, oldest first, before any use.
func (c *versionCache) add(id string, size int64) {
	c.clock++
	c.entries[id] = &cacheEntry{size: size, lastUsed: c.clock}
}

// has reports whether id is cached.
func (c *versionCache) has(id string) bool { return c.entries[id] != nil }

// setInUse marks exactly the versions in inUse as used now; the others
// keep the time they were last used.
func (c *versionCache) setInUse(inUse map[string]bool) {
	c.clock++
	for id, e := range c.entries {
		e.inUse = inUse[id]
		if e.inUse {
			e.lastUsed = c.clock
		}
	}
}

// unusedBytes is what the versions not in use take.
func (c *versionCache) unusedBytes() int64 {
	var n int64
	for _, e := range c.entries {
		if !e.inUse {
			n += e.size
		}
	}
	return n
}

// evict forgets, and returns, the versions to remove: of those not in
// use, the least recently used first, until the rest take at most target
// bytes.
func (c *versionCache) evict() []string {
	over := c.unusedBytes() - c.target
	if over <= 0 {
		return nil
	}
	var unused []string
	for id, e := range c.entries {
		if !e.inUse {
			unused = append(unused, id)
		}
	}
	slices.SortFunc(unused, func(a, b string) int {
		return cmp.Or(cmp.Compare(c.entries[a].lastUsed, c.entries[b].lastUsed), cmp.Compare(a, b))
	})
	var out []string
	for _, id := range unused {
		if over <= 0 {
			break
		}
		over -= c.entries[id].size
		delete(c.entries, id)
		out = append(out, id)
	}
	return out
}

// remove forgets id (it could not be kept, or was removed by hand).
func (c *versionCache) remove(id string) { delete(c.entries, id) }
