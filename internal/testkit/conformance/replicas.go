package conformance

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/notify"
)

// Scenarios among nimbus replicas: what one node publishes, another
// fetches, and nothing but intact code is installed.

// uploadThenFetchOnAnotherNode proves a bundle of several chunks published
// on one node arrives whole on another.
func uploadThenFetchOnAnotherNode(t *testing.T, e *Env) {
	a, b := e.Node(), e.Node()
	code, data := e.Publish(a, "roundtrip-1-1", 3<<20+17) // several chunks
	if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
		t.Fatal(err)
	}
	e.expectHolds(b, code, data)
}

// noReplicaMeansNotHeld proves a fetch with no registered replica fails
// with ErrNotHeld and installs nothing.
func noReplicaMeansNotHeld(t *testing.T, e *Env) {
	a, b := e.Node(), e.Node()
	code, _ := e.Publish(a, "orphan-1-1", 1000)
	e.Unregister(a, code)
	err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest)
	if !errors.Is(err, codedistributor.ErrNotHeld) {
		t.Fatalf("fetch with no replica: %v, want ErrNotHeld", err)
	}
	e.expectNothing(b, code)
}

// corruptSourceIsDiscardedAndAnotherUsed proves corrupt bytes are never
// installed, the node serving them notices, and an intact replica that
// appears later is used.
func corruptSourceIsDiscardedAndAnotherUsed(t *testing.T, e *Env) {
	a, b, c := e.Node(), e.Node(), e.Node()
	code, data := e.Publish(a, "corrupt-1-1", 200<<10)
	// a's copy is altered on disk; so far it is the only replica.
	corrupt(t, filepath.Join(a.Store.Dir(code.TopologyID), codedistributor.ArtifactFile))
	reported := a.Store.Reported()
	// A backend that reads a's disk must refuse its bytes, install
	// nothing, and a must notice (its CodeService or its backend); one
	// that stores the code elsewhere (HDFS) never reads them and
	// installs intact code.
	if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
		if !errors.Is(err, codedistributor.ErrCorrupt) && !errors.Is(err, codedistributor.ErrNotHeld) {
			t.Fatalf("fetch from a corrupt only replica: %v, want ErrCorrupt or ErrNotHeld", err)
		}
		if !notify.Closed(reported) {
			t.Fatal("the node serving corrupt code did not notice")
		}
	}
	e.expectNothingOrIntact(b, code, data)
	// An intact replica appears: the next fetch uses it.
	e.Install(c, code, data)
	e.Register(c, code)
	if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
		t.Fatal(err)
	}
	e.expectHolds(b, code, data)
}

// metaMustMatchTheDigest proves a fetch for a digest no replica advertises
// fails and installs nothing.
func metaMustMatchTheDigest(t *testing.T, e *Env) {
	a, b := e.Node(), e.Node()
	code, _ := e.Publish(a, "digest-1-1", 1000)
	wrong := bytes.Repeat([]byte{7}, 32)
	// a advertises the wrong digest: no replica holds the wanted one.
	err := b.Fetcher.Fetch(t.Context(), code.TopologyID, wrong)
	if err == nil {
		t.Fatal("fetch with a digest no replica has succeeded")
	}
	e.expectNothing(b, code)
}

// cleanupIsIdempotent proves a backend's Cleanup of a topology succeeds
// again once there is nothing left to clean.
func cleanupIsIdempotent(t *testing.T, e *Env) {
	a := e.Node()
	code, _ := e.Publish(a, "cleanup-1-1", 1000)
	for range 2 {
		if err := a.Dist.Cleanup(t.Context(), code.TopologyID); err != nil {
			t.Fatal(err)
		}
	}
}
