package nimbus

import (
	"errors"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// chooseTarget against a queue of a (leading), b (lacks code), c, d (not
// registered), with e registered but not queued and f only in
// nimbus.seeds.
func TestChooseTarget(t *testing.T) {
	info := func(port int32) *clusterv1.NimbusInfo { return &clusterv1.NimbusInfo{Host: "h", Port: port} }
	entry := func(seq int64, port int32) cluster.LockEntry {
		return cluster.LockEntry{Name: "n" + string(rune('0'+seq)), Seq: seq, Info: info(port)}
	}
	sum := func(port int32, missing ...string) *nimbusv1.NimbusSummary {
		return &nimbusv1.NimbusSummary{Host: "h", Port: port, MissingTopologyIds: missing}
	}
	v := handoverView{
		self:       "h:1",
		queue:      []cluster.LockEntry{entry(1, 1), entry(2, 2), entry(3, 3), entry(4, 4)},
		nimbuses:   []*nimbusv1.NimbusSummary{sum(1), sum(2, "t-1-1", "t-2-2"), sum(3), sum(5, "t-1-1")},
		seeds:      []string{"h:1", "h:6"},
		registered: map[string]*clusterv1.NimbusInfo{"h:1": info(1), "h:2": info(2), "h:3": info(3), "h:5": info(5)},
	}
	for _, tc := range []struct {
		name, to string
		want     string // the chosen node, or ""
		err      error
		says     string // in the refusal
	}{
		{name: "next passes over one lacking code", to: "", want: "n3"},
		{name: "named", to: "h:3", want: "n3"},
		{name: "named, lacking code", to: "h:2", err: apierr.ErrWrongStatus, says: "h:2 lacks the code of 2 live topologies (t-1-1, t-2-2)"},
		{name: "named, queued but not registered", to: "h:4", err: apierr.ErrWrongStatus, says: "not registered"},
		{name: "named, registered but not queued", to: "h:5", err: apierr.ErrWrongStatus, says: "registered but not queued for leadership: h:5 lacks the code"},
		{name: "named, a seed that is not running", to: "h:6", err: apierr.ErrWrongStatus, says: "in nimbus.seeds but not registered"},
		{name: "named, unknown", to: "h:7", err: apierr.ErrNotFound, says: "no nimbus h:7: the registered nimbuses are h:1, h:2, h:3, h:5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseTarget(v, tc.to)
			if tc.err == nil {
				if err != nil || got.Name != tc.want {
					t.Fatalf("chose %q (%v), want %q", got.Name, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.err, tc.says)
			}
		})
	}

	t.Run("nobody can lead: every reason named", func(t *testing.T) {
		w := v
		w.queue = []cluster.LockEntry{entry(1, 1), entry(2, 2), entry(4, 4)}
		_, err := chooseTarget(w, "")
		if !errors.Is(err, apierr.ErrWrongStatus) || !strings.Contains(err.Error(), "h:2 lacks") || !strings.Contains(err.Error(), "h:4 is queued but not registered") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("alone", func(t *testing.T) {
		w := v
		w.queue = w.queue[:1]
		if _, err := chooseTarget(w, ""); !errors.Is(err, apierr.ErrWrongStatus) || !strings.Contains(err.Error(), "no other nimbus is queued") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a node before self is not a target", func(t *testing.T) {
		w := v
		w.self = "h:3"
		if _, err := chooseTarget(w, "h:2"); err == nil {
			t.Fatal("a nimbus queued before the leader was chosen")
		}
	})
}
