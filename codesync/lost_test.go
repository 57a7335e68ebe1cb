package codesync

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func TestLostMarksApplyToTheirCodeOnly(t *testing.T) {
	storms := map[string]*clusterv1.StormBase{
		"a": {CodeMetaDigest: []byte{1}}, "b": {CodeMetaDigest: []byte{2}}, "junk": nil,
	}
	marks := map[string]*clusterv1.LostMark{
		"a":    {CodeMetaDigest: []byte{1}}, // applies
		"b":    {CodeMetaDigest: []byte{9}}, // other code: stale
		"gone": {CodeMetaDigest: []byte{3}}, // no such topology
		"junk": {CodeMetaDigest: nil},       // undecodable StormBase
	}
	got := LostMarks(storms, marks)
	if len(got) != 1 || got["a"] == nil {
		t.Fatalf("LostMarks = %v, want only a", got)
	}
}

func TestHeldNowhereMarksAfterTheGraceOfOneSpell(t *testing.T) {
	nowhere := fmt.Errorf("fetch: %w", codedistributor.ErrHeldNowhere)
	t0 := time.Unix(1000, 0)
	h := &heldNowhere{grace: time.Minute}
	steps := []struct {
		err  error
		at   time.Duration
		due  bool
		what string
	}{
		{nowhere, 0, false, "the spell starts"},
		{nowhere, 59 * time.Second, false, "within the grace"},
		{errors.New("zk: connection closed"), 61 * time.Second, false, "an outage ends the spell"},
		{nowhere, 62 * time.Second, false, "a new spell"},
		{nowhere, 121 * time.Second, false, "59 s into it"},
		{nowhere, 122 * time.Second, true, "the grace has passed"},
	}
	for _, s := range steps {
		if due := h.observe(s.err, t0.Add(s.at)); due != s.due {
			t.Fatalf("%s: due = %v, want %v", s.what, due, s.due)
		}
	}
	h.marked = true
	if h.observe(nowhere, t0.Add(200*time.Second)) {
		t.Fatal("due again once marked")
	}
	if h.observe(nil, t0.Add(201*time.Second)); h.marked || !h.since.IsZero() {
		t.Fatal("a fetch that succeeded did not end the spell")
	}
}

func TestHeldNowhereWaitIsCappedByTheGrace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := &heldNowhere{grace: 10 * time.Second}
	h.observe(codedistributor.ErrHeldNowhere, t0)
	if w := h.wait(30*time.Second, t0.Add(4*time.Second)); w != 6*time.Second {
		t.Fatalf("wait = %v, want 6s: the attempt that marks must come when the grace ends", w)
	}
	if w := (&heldNowhere{}).wait(30*time.Second, t0); w != 30*time.Second {
		t.Fatalf("never marking: wait = %v, want the backoff", w)
	}
	if w := h.wait(30*time.Second, t0.Add(time.Hour)); w != 30*time.Second {
		t.Fatalf("past the grace, the mark not made: wait = %v, want the backoff (a mark that failed must not be retried in a tight loop)", w)
	}
}
