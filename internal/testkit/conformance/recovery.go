package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// Scenarios where no nimbus holds the code any more: it is recovered from
// a supervisor that runs it, or found to be held nowhere.

// recoveredFromASupervisor proves that once every nimbus copy is gone a
// fetch says ErrNotHeld, and recovery gets the code from the supervisor
// that runs it.
func recoveredFromASupervisor(t *testing.T, e *Env) {
	a, sup, b := e.Node(), e.Node(), e.Node()
	code, data := e.Publish(a, "recover-1-1", 300<<10)
	e.Install(sup, code, data) // a supervisor runs it
	e.RegisterSupervisor(sup, "sup-1")
	// Every nimbus copy is gone.
	e.Unregister(a, code)
	if err := a.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); !errors.Is(err, codedistributor.ErrNotHeld) {
		t.Fatalf("fetch from nimbuses with none holding the code: %v, want ErrNotHeld", err)
	}
	src, err := b.Fetcher.Recover(t.Context(), code.TopologyID, code.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if src.Supervisor != "sup-1" || src.Addr != sup.Addr {
		t.Fatalf("recovered from %v, want supervisor sup-1 at %s", src, sup.Addr)
	}
	e.expectHolds(b, code, data)
}

// recoveredPastStaleReplicas proves recovery does not wait for a stale
// replica to notice: the only replica lost its copy (its disk was wiped)
// and has not noticed, so it is still registered and answers that it
// holds nothing.
func recoveredPastStaleReplicas(t *testing.T, e *Env) {
	a, sup, b := e.Node(), e.Node(), e.Node()
	code, data := e.Publish(a, "stale-1-1", 300<<10)
	e.Install(sup, code, data)
	e.RegisterSupervisor(sup, "sup-1")
	if err := a.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	src, err := b.Fetcher.Recover(t.Context(), code.TopologyID, code.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if src.Supervisor != "sup-1" {
		t.Fatalf("recovered from %v, want supervisor sup-1", src)
	}
	e.expectHolds(b, code, data)
}

// recoveredFromAnySupervisor proves the last look before a LOST mark asks
// every supervisor, even more than one recovery asks, and finds the one
// holding the code. It says ErrHeldNowhere only when every one answered
// that it holds nothing, not when one is silent (that one may hold it).
func recoveredFromAnySupervisor(t *testing.T, e *Env) {
	a, empty, holder, b := e.Node(), e.Node(), e.Node(), e.Node()
	code, data := e.Publish(a, "anywhere-1-1", 1000)
	e.Install(holder, code, data)
	for i := range 40 {
		e.RegisterSupervisor(empty, fmt.Sprintf("sup-%02d", i)) // they run other topologies
	}
	e.RegisterSupervisor(holder, "sup-holder")
	e.Unregister(a, code)
	if err := a.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	src, err := b.Fetcher.RecoverFromAny(t.Context(), code.TopologyID, code.Digest)
	if err != nil || src.Supervisor != "sup-holder" {
		t.Fatalf("RecoverFromAny: %v, %v; want the code from sup-holder", src, err)
	}
	e.expectHolds(b, code, data)
	if err := holder.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fetcher.RecoverFromAny(t.Context(), code.TopologyID, code.Digest); !errors.Is(err, codedistributor.ErrHeldNowhere) {
		t.Fatalf("every supervisor answered it holds nothing: %v, want ErrHeldNowhere", err)
	}
	e.RegisterSupervisor(&Node{Addr: testcluster.ClosedAddr(t)}, "sup-silent")
	if _, err := b.Fetcher.RecoverFromAny(t.Context(), code.TopologyID, code.Digest); err == nil || errors.Is(err, codedistributor.ErrHeldNowhere) {
		t.Fatalf("one supervisor does not answer: %v, want an error that is not ErrHeldNowhere (it may hold the code)", err)
	}
}

// heldNowhere proves recovery with no copy on any nimbus or supervisor
// fails with ErrHeldNowhere and installs nothing.
func heldNowhere(t *testing.T, e *Env) {
	a, sup, b := e.Node(), e.Node(), e.Node()
	code, _ := e.Publish(a, "nowhere-1-1", 1000)
	e.RegisterSupervisor(sup, "sup-1") // runs other topologies
	e.Unregister(a, code)
	if err := a.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	_, err := b.Fetcher.Recover(t.Context(), code.TopologyID, code.Digest)
	if !errors.Is(err, codedistributor.ErrHeldNowhere) {
		t.Fatalf("recovery with no copy anywhere: %v, want ErrHeldNowhere", err)
	}
	e.expectNothing(b, code)
}
