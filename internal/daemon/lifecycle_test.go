package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestLifecycleStopsInReverseOnceAndKeepsTheFirstError(t *testing.T) {
	var l Lifecycle
	var order []int
	for i := range 3 {
		l.OnClose(func() { order = append(order, i) })
	}
	ran := make(chan struct{})
	l.Go(func() { close(ran) })
	l.Wait()
	select {
	case <-ran:
	default:
		t.Fatal("Wait returned before the goroutine ran")
	}
	l.Close()
	l.Close()
	if !slices.Equal(order, []int{2, 1, 0}) {
		t.Fatalf("stops ran in order %v, want [2 1 0] once", order)
	}
	first, second := errors.New("first"), errors.New("second")
	l.Fail(first)
	l.Fail(second)
	if err := <-l.Err(); err != first {
		t.Fatalf("Err delivered %v, want the first", err)
	}
}

// Ready closes only once everything Announce waits for has happened, and
// never when the daemon stops first.
func TestAnnounceWaitsForEverything(t *testing.T) {
	var l Lifecycle
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	a, b := make(chan struct{}), make(chan struct{})
	l.Go(func() { l.Announce(t.Context(), log, "ready", func() []any { return []any{"k", "v"} }, a, b) })
	close(a)
	select {
	case <-l.Ready():
		t.Fatal("ready with one of two things done")
	default:
	}
	close(b)
	l.Wait()
	select {
	case <-l.Ready():
	default:
		t.Fatal("not ready once everything was done")
	}
	if !strings.Contains(logs.String(), "msg=ready k=v") {
		t.Fatalf("ready line %q", logs.String())
	}

	var stopped Lifecycle
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	stopped.Announce(ctx, log, "ready", func() []any { return nil }, make(chan struct{}))
	select {
	case <-stopped.Ready():
		t.Fatal("ready after the daemon stopped first")
	default:
	}
}
