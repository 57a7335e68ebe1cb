package daemon

import (
	"errors"
	"slices"
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
