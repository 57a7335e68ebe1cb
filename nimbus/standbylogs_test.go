package nimbus

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// Normal operation is quiet. A follower catching up on a
// topology just submitted says so at INFO; WARN is kept for code still
// missing after topology.max.replication.wait.time.sec, and for the
// leader's "no standby" only once that condition has outlived the wait.

// codesyncWarnings are the WARN (and worse) lines codesync logged.
func codesyncWarnings(logs *logRecords) []logRecord {
	return logs.Find(func(r logRecord) bool { return r.Level >= slog.LevelWarn && r.Attrs["component"] == "codesync" })
}

// noStandbyWarnings are the leader's warnings that no standby could take
// over (warnIfNoStandby), logged at or after since.
func noStandbyWarnings(logs *logRecords, since time.Time) []logRecord {
	return logs.Find(func(r logRecord) bool {
		return r.Level >= slog.LevelWarn && strings.Contains(r.Message, "no standby") && !r.Time.Before(since)
	})
}

// eligibleStandbys is nimbus_eligible_standbys as s exports it (-1 if it
// does not).
func eligibleStandbys(s *Server) int {
	families, err := s.reg.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() == "nimbus_eligible_standbys" && len(f.GetMetric()) == 1 {
			return int(f.GetMetric()[0].GetGauge().GetValue())
		}
	}
	return -1
}

// Three nimbuses, submissions acknowledged with one replica (the default),
// so the followers fetch after the commit: they leave the leader queue and
// come back, and none of it is a warning; nor does the leader warn that no
// standby holds the code while they fetch.
func TestInProcessNormalSubmitWarnsNothing(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	logs := new(logRecords)
	a := startLogged(t, z.Addr(), t.TempDir(), nil, logs.Logger("a"))
	awaitLeading(t, a)
	followers := []*Server{
		startLogged(t, z.Addr(), t.TempDir(), nil, logs.Logger("b")),
		startLogged(t, z.Addr(), t.TempDir(), nil, logs.Logger("c")),
	}
	settled := func(standbys int) func() error {
		return func() error {
			for _, f := range followers {
				if !f.election.Queued() {
					return fmt.Errorf("%s not queued", f.Addr())
				}
			}
			if n := eligibleStandbys(a); n != standbys {
				return fmt.Errorf("nimbus_eligible_standbys %d, want %d", n, standbys)
			}
			return nil
		}
	}
	testcluster.WaitFor(t, 20*time.Second, "both followers queued as standbys", settled(2))

	cl := sdk(t, a)
	for _, name := range []string{"quiet-1", "quiet-2", "quiet-3"} {
		submitSpec(t, cl, name)
	}
	testcluster.WaitFor(t, 20*time.Second, "both followers holding every topology's code", settled(2))
	if cs := a.view.ClusterInfo().GetCluster(); len(cs.GetTopologies()) != 3 || len(cs.GetLeadershipBlockedBy()) != 0 {
		t.Fatalf("%d topologies, blocked by %v; want 3, none", len(cs.GetTopologies()), cs.GetLeadershipBlockedBy())
	}

	if w := codesyncWarnings(logs); len(w) > 0 {
		t.Errorf("codesync warned during normal submissions: %+v", w)
	}
	if w := noStandbyWarnings(logs, time.Time{}); len(w) > 0 {
		t.Errorf("the leader warned of no standby during normal submissions: %+v", w)
	}
	// What the followers did say, for whoever reads a verbose run.
	for _, r := range logs.Find(func(r logRecord) bool { return r.Attrs["component"] == "codesync" }) {
		t.Logf("%s %s %s %v", r.Nimbus, r.Level, r.Message, r.Attrs)
	}
}

// A standby whose store turned read-only cannot fetch a new topology's
// code. The leader's nimbus_eligible_standbys says 0 at once; the warnings
// come once the wait (2 s here) has passed: the follower's that its code is
// still missing, the leader's that no standby could take over, each once.
// Once the store is writable again, the follower fetches and is a standby
// again. Needs root (a tmpfs, as the store tests).
func TestInProcessStandbyWithoutCodeWarnsAfterTheWait(t *testing.T) {
	const wait = 2 * time.Second
	short := func(c *configs.Config) { c.MaxReplicationWaitSecs = int(wait / time.Second) }
	z := testcluster.StartZooKeeper(t)
	logs := new(logRecords)
	a := startLogged(t, z.Addr(), t.TempDir(), short, logs.Logger("a"))
	awaitLeading(t, a)
	dir := mountTmpfs(t, 16<<20)
	b := startLogged(t, z.Addr(), dir, short, logs.Logger("b"))
	testcluster.WaitFor(t, 20*time.Second, "b a standby", func() error {
		if n := eligibleStandbys(a); n != 1 || !b.election.Queued() {
			return fmt.Errorf("nimbus_eligible_standbys %d, b queued %v", n, b.election.Queued())
		}
		return nil
	})
	remount(t, dir, true)

	began := time.Now()
	id := submitSpec(t, sdk(t, a), "stuck")
	testcluster.WaitFor(t, 10*time.Second, "nimbus_eligible_standbys 0", func() error {
		if n := eligibleStandbys(a); n != 0 {
			return fmt.Errorf("nimbus_eligible_standbys %d", n)
		}
		// The gauge at once, the line only after the wait.
		if w := noStandbyWarnings(logs, began); len(w) > 0 {
			t.Fatalf("warned %v after the submission began, before the gauge said 0: %+v", time.Since(began), w)
		}
		return nil
	})

	stuck := func() []logRecord {
		return logs.Find(func(r logRecord) bool {
			return r.Nimbus == "b" && r.Level >= slog.LevelWarn && r.Attrs["component"] == "codesync" && strings.Contains(r.Message, "still missing")
		})
	}
	testcluster.WaitFor(t, 30*time.Second, "both warnings", func() error {
		if len(noStandbyWarnings(logs, began)) == 0 {
			return errors.New("the leader has not warned of no standby")
		}
		if len(stuck()) == 0 {
			return errors.New("b has not warned of missing code")
		}
		return nil
	})
	for _, w := range append(noStandbyWarnings(logs, began), stuck()...) {
		if early := w.Time.Sub(began); early < wait {
			t.Errorf("%s warned %v after the submission began, within the %v wait: %q", w.Nimbus, early, wait, w.Message)
		}
	}
	if w := noStandbyWarnings(logs, began); len(w) != 1 || w[0].Nimbus != "a" {
		t.Errorf("no-standby warnings %+v, want one, from the leader", w)
	}
	if w := stuck(); !strings.Contains(w[0].Attrs["topologies"], id) {
		t.Errorf("b's warning does not name %s: %+v", id, w[0])
	}

	remount(t, dir, false)
	testcluster.WaitFor(t, 60*time.Second, "b a standby again", func() error {
		if n := eligibleStandbys(a); n != 1 || !b.election.Queued() {
			return fmt.Errorf("nimbus_eligible_standbys %d, b queued %v", n, b.election.Queued())
		}
		return nil
	})
	if w := stuck(); len(w) != 1 {
		t.Errorf("b warned %d times of missing code in one spell, want once: %+v", len(w), w)
	}
}
