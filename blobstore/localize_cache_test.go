package blobstore

import (
	"slices"
	"testing"
)

func TestVersionCacheEvictsLeastRecentlyUsedFirst(t *testing.T) {
	c := newVersionCache(100)
	c.add("a", 40)
	c.add("b", 40)
	c.add("c", 40)
	c.setInUse(map[string]bool{"a": true, "b": true, "c": true})
	if got := c.evict(); got != nil {
		t.Fatalf("evicted %v while every version is in use", got)
	}
	c.setInUse(map[string]bool{"b": true, "c": true}) // a unused: oldest
	c.setInUse(map[string]bool{"c": true})            // b unused now
	if got := c.evict(); got != nil {
		t.Fatalf("evicted %v with 80 unused bytes under a target of 100", got)
	}
	c.add("d", 40) // unused from the start: 120 unused
	c.setInUse(map[string]bool{"c": true})
	if got := c.evict(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("evicted %v, want the least recently used, a", got)
	}
	if c.has("a") || !c.has("b") || c.unusedBytes() != 80 {
		t.Fatalf("after eviction: has a %v, has b %v, unused %d", c.has("a"), c.has("b"), c.unusedBytes())
	}
}

func TestVersionCacheNeverEvictsWhatIsInUse(t *testing.T) {
	c := newVersionCache(0)
	c.add("big", 1000)
	c.add("old", 10)
	c.add("new", 10)
	c.setInUse(map[string]bool{"big": true})
	got := c.evict()
	if !slices.Equal(got, []string{"old", "new"}) {
		t.Fatalf("evicted %v, want old then new (target 0)", got)
	}
	if !c.has("big") {
		t.Fatal("a version in use was evicted")
	}
}

func TestVersionCacheCapStopsAtTarget(t *testing.T) {
	c := newVersionCache(25)
	for _, id := range []string{"v1", "v2", "v3", "v4"} {
		c.add(id, 10)
	}
	c.setInUse(nil)
	if got := c.evict(); !slices.Equal(got, []string{"v1", "v2"}) {
		t.Fatalf("evicted %v, want v1 and v2 (40 bytes down to 20, under 25)", got)
	}
}
