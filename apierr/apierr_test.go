package apierr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
)

// A package's sentinel keeps its own message and identity, and means
// what it was declared to mean, wrapped or not.
func TestSentinelMeans(t *testing.T) {
	errGone := apierr.Sentinel("store: gone", apierr.ErrNotFound)
	err := fmt.Errorf("fetch x: %w", errGone)
	if !errors.Is(err, errGone) || !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("%v: want it to be both the sentinel and ErrNotFound", err)
	}
	if errors.Is(err, apierr.ErrUnavailable) {
		t.Fatalf("%v: means ErrUnavailable too", err)
	}
	if errGone.Error() != "store: gone" {
		t.Fatalf("message %q, want %q", errGone.Error(), "store: gone")
	}
}

// NotCommitted keeps its cause as text: the cause's own meaning cannot
// turn "surely not committed" into something else.
func TestNotCommittedHidesTheCausesMeaning(t *testing.T) {
	err := apierr.NotCommitted(fmt.Errorf("%w: distribute", apierr.ErrOutcomeUnknown))
	if !errors.Is(err, apierr.ErrNotCommitted) || errors.Is(err, apierr.ErrOutcomeUnknown) {
		t.Fatalf("%v: want ErrNotCommitted only", err)
	}
}
