package integration

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Worker truth in the API and the CLI, on real processes.
// One supervisor with two slots runs a healthy topology and one whose
// worker exits at once; a third topology finds no free slot. The real
// stormctl and the SDK show the failing worker with its exit, error and
// output, a status that tells the truth, and the missing slots; the
// leader's metric counts them.
func TestWorkerTruthFailingAndUnplaced(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	c.StartSupervisors(t, 1, testcluster.WithArgs("--supervisor.heartbeat.frequency.secs", "1"))
	cl := newClient(t, c, ps...)
	ctl := func(args ...string) string {
		t.Helper()
		out, errOut, code := stormctl(t, append(append(c.ClientFlags(), "--seeds", leader.Addr()), args...)...)
		if code != 0 {
			t.Fatalf("stormctl %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	// row is the named topology's STATUS and WORKERS in list's table.
	row := func(table, name string) string {
		for _, line := range strings.Split(table, "\n") {
			if cols := regexp.MustCompile(`\s{2,}`).Split(line, -1); len(cols) > 3 && cols[0] == name {
				return cols[2] + " | " + cols[3]
			}
		}
		return ""
	}

	submitExample(t, cl, "good", 1)
	bad := testSpec("bad")
	bad.NumWorkers = 1
	bad.WorkerCommand = []string{"/bin/sh", "-c", "echo starting; echo boom >&2; exit 3"}
	data := randomBytes(t, 100)
	if _, err := cl.SubmitTopology(t.Context(), bad, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}

	testcluster.WaitFor(t, 30*time.Second, "list showing the good topology running and the bad one failing", func() error {
		out := ctl("list")
		good, bad := row(out, "good"), row(out, "bad")
		if good != "active | 1/1" || bad != "active, 1/1 worker failing | 0/1" {
			return fmt.Errorf("list:\n%s", out)
		}
		return nil
	})
	testcluster.WaitFor(t, 20*time.Second, "topology bad showing the exit, error and output", func() error {
		out := ctl("topology", "bad", "--logs")
		for _, want := range []string{"status:  active, 1/1 worker failing", "backoff", "exit 3", "exit status 3", " ago", "  boom\n"} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("no %q in:\n%s", want, out)
			}
		}
		return nil
	})
	if out := ctl("topology", "bad"); strings.Contains(out, "boom") {
		t.Fatalf("the log tail without --logs:\n%s", out)
	}
	sups := ctl("supervisors")
	if lines := strings.Split(sups, "\n"); len(lines) < 2 || !strings.Contains(lines[0], "BACKOFF") || strings.Fields(lines[1])[5] != "1" {
		t.Fatalf("supervisors:\n%s", sups)
	}

	// The SDK: the same truth; the output is in the worker's log, on its
	// supervisor's logviewer, never in the heartbeat.
	info, err := cl.GetTopologyInfo(t.Context(), "bad", client.WithLogTail())
	if err != nil {
		t.Fatal(err)
	}
	w := info.GetWorkers()
	if len(w) != 1 || w[0].GetState() != "backoff" || w[0].LastExitCode == nil || w[0].GetLastExitCode() != 3 ||
		w[0].GetRestarts() < 1 || w[0].GetLastErrorUnixMs() == 0 || w[0].GetLogTail() != "" || w[0].GetLogLink() == "" {
		t.Fatalf("workers %v", w)
	}
	if info.GetTopology().GetNumWorkersFailing() != 1 || info.GetTopology().GetMissingSlots() != 0 {
		t.Fatalf("topology %v", info.GetTopology())
	}

	// Every slot taken: a third topology lacks both of its slots.
	submitExample(t, cl, "big", 2)
	testcluster.WaitFor(t, 20*time.Second, "list and topology saying big lacks 2 slots", func() error {
		out := ctl("list")
		if row(out, "big") != "active, lacks 2 slots | 0/0" {
			return fmt.Errorf("list:\n%s", out)
		}
		if out := ctl("topology", "big"); !strings.Contains(out, "status:  active, lacks 2 slots") {
			return fmt.Errorf("topology:\n%s", out)
		}
		return nil
	})
	testcluster.WaitFor(t, 10*time.Second, "nimbus_unplaced_slots 2 on the leader", func() error {
		m, err := leader.Metrics()
		if err != nil {
			return err
		}
		if !strings.Contains(m, "\nnimbus_unplaced_slots 2\n") || !strings.Contains(m, "\nnimbus_unplaced_topologies 1\n") {
			return fmt.Errorf("metrics lack the unplaced gauges at 2 and 1")
		}
		return nil
	})

	// The bad topology's slot freed: big takes it and lacks one.
	zero := int32(0)
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "bad", WaitSecs: &zero}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "big lacking 1 slot", func() error {
		if out := ctl("list"); !strings.HasSuffix(row(out, "big"), ", lacks 1 slot | 1/1") && !strings.HasSuffix(row(out, "big"), ", lacks 1 slot | 0/1") {
			return fmt.Errorf("list:\n%s", out)
		}
		return nil
	})
}
