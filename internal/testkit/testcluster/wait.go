package testcluster

import (
	"testing"
	"time"
)

// PollInterval is how often WaitFor checks its condition.
const PollInterval = 10 * time.Millisecond

// WaitFor calls cond every PollInterval until it returns nil, and fails the
// test if it has not within timeout, naming what it waited for and the last
// error. It checks once immediately, blocks until cond succeeds or the time
// is up, and must be called from the test's goroutine.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := poll(timeout, PollInterval, cond); err != nil {
		t.Fatalf("testcluster: timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// poll calls cond every interval until it returns nil or timeout has passed;
// it returns cond's last error in the latter case.
func poll(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		<-tick.C
	}
}

// Poll is WaitFor for code without a testing.TB (benchmarks' inner
// loops): it returns cond's last error instead of failing.
func Poll(timeout time.Duration, cond func() error) error {
	return poll(timeout, PollInterval, cond)
}
