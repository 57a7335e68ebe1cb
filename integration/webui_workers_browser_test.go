package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// TestWebUIBrowserSteersWorkers drives the topology page in headless
// Chromium against a topology that wants three workers where one
// supervisor has two slots: the page shows the shortfall ("2 of 3
// running, lacks 1 slot", in red); "Restart" on one worker, confirmed in
// the dialog, gives that worker a new pid on the same slot (as GetTopologyInfo
// reports it) and leaves the other's alone; the "Log levels" panel sets
// wordcount=DEBUG with a timeout, which the REST API's logconfig then
// answers, and removes it again; a bad timeout is refused in the page
// and sends nothing. The page raises no exception and breaks
// no rule of its CSP.
func TestWebUIBrowserSteersWorkers(t *testing.T) {
	chromium := requireChromium(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr())
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 15*time.Second)
	sup, err := c.StartSupervisor(testcluster.WithSlots(testcluster.FreePorts(t, 2)...))
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, c, ps...)
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	base := ps[0].UIURL()

	const name = "webui-short"
	id := submitExample(t, cl, name, 3)
	before := waitWorkers(t, conn, id, 2, 60*time.Second, sup)

	b := startBrowser(t, chromium)
	b.do(t, "open the topology's page", 30*time.Second, chromedp.Navigate(base+"/#/topology/"+id))

	// The shortfall, as stormctl list says it.
	b.waitJS(t, "the shortfall on the topology page", 30*time.Second, `
		(() => {
			const w = document.querySelector('#topology-workers');
			return w ? w.textContent + '|' + w.className : '';
		})()`, func(got string) error {
		if got != "2 of 3 running, lacks 1 slot|shortfall" {
			return fmt.Errorf("#topology-workers (text|class) %q, want %q", got, "2 of 3 running, lacks 1 slot|shortfall")
		}
		return nil
	})

	// Restart one worker from its row, confirmed in the dialog.
	info, err := cl.GetTopologyInfo(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var target *nimbusv1.WorkerSummary
	for _, w := range info.GetWorkers() {
		if w.GetState() == "running" && target == nil {
			target = w
		}
	}
	if target == nil {
		t.Fatalf("no running worker in %v", info.GetWorkers())
	}
	worker := fmt.Sprintf("%s:%d", target.GetHost(), target.GetPort())
	button := fmt.Sprintf(`button.restart-worker[data-worker=%q]`, worker)
	b.do(t, "click Restart on "+worker, 30*time.Second, chromedp.Click(chromedp.CSS(button)))
	b.do(t, "the confirmation dialog", 10*time.Second, chromedp.WaitVisible(chromedp.CSS("#confirm-ok")))
	b.waitText(t, "#confirm-title", 5*time.Second, "Restart worker "+worker+"?")
	b.do(t, "confirm", 10*time.Second, chromedp.Click(chromedp.CSS("#confirm-ok")))
	b.waitText(t, "#action-result", 30*time.Second, "Restart: worker "+worker+" restarts on its slot (ok)")
	testcluster.WaitFor(t, 30*time.Second, "a new pid for "+worker+" in GetTopologyInfo", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), name)
		if err != nil {
			return err
		}
		for _, w := range info.GetWorkers() {
			if w.GetHost() != target.GetHost() || w.GetPort() != target.GetPort() {
				continue
			}
			if w.GetState() != "running" || w.GetPid() == 0 || w.GetPid() == before[target.GetPort()] || w.GetRestarts() != 1 {
				return fmt.Errorf("%s is %s with pid %d (was %d), %d restarts", worker, w.GetState(), w.GetPid(), before[target.GetPort()], w.GetRestarts())
			}
			return nil
		}
		return fmt.Errorf("no worker %s", worker)
	})
	after, err := runningWorkers(t, conn, id, sup)
	if err != nil {
		t.Fatal(err)
	}
	for port, pid := range before {
		if port != target.GetPort() && after[port] != pid {
			t.Errorf("the other worker, on port %d, has pid %d, was %d: it was restarted too", port, after[port], pid)
		}
	}

	// A bad timeout is refused in the page, naming the field; nothing is sent.
	b.do(t, "fill in the log level form with a bad timeout", 10*time.Second,
		chromedp.SetValue(chromedp.CSS("#loglevel-logger"), "wordcount"),
		chromedp.SetValue(chromedp.CSS("#loglevel-timeout"), "-5"),
		chromedp.Click(chromedp.CSS("#loglevel-set")))
	b.waitJS(t, "the refusal of timeout -5", 10*time.Second, `document.querySelector('#loglevel-result')?.textContent ?? ''`,
		func(got string) error {
			if !strings.HasPrefix(got, "Timeout: ") || !strings.Contains(got, `"-5"`) {
				return fmt.Errorf("#loglevel-result says %q, want the timeout refused", got)
			}
			return nil
		})
	if levels := logConfigOf(t, base, id); len(levels) != 0 {
		t.Fatalf("GET logconfig after a refused timeout: %+v", levels)
	}

	// Set a log level from the panel; the REST API answers it.
	b.do(t, "fill in the log level form", 10*time.Second,
		chromedp.SetValue(chromedp.CSS("#loglevel-logger"), "wordcount"),
		chromedp.SetValue(chromedp.CSS("#loglevel-level"), "DEBUG"),
		chromedp.SetValue(chromedp.CSS("#loglevel-timeout"), "600"),
		chromedp.Click(chromedp.CSS("#loglevel-set")))
	b.waitText(t, "#loglevel-result", 30*time.Second, "Set wordcount=DEBUG: done")
	b.waitJS(t, "wordcount at DEBUG in the panel", 10*time.Second, `
		[...document.querySelectorAll('#loglevels-table tbody tr')].map((r) => r.cells[0].textContent + '=' + r.cells[1].textContent + ' ' + r.cells[3].textContent).join(',')`,
		func(got string) error {
			if got != "wordcount=DEBUG 600" {
				return fmt.Errorf("the panel lists %q, want %q", got, "wordcount=DEBUG 600")
			}
			return nil
		})
	levels := logConfigOf(t, base, id)
	if l, ok := levels["wordcount"]; !ok || l.TargetLevel != "DEBUG" || l.Timeout != 600 || l.TimeoutEpoch <= time.Now().UnixMilli() {
		t.Fatalf("GET logconfig after the page set wordcount=DEBUG for 600 s: %+v", levels)
	}

	// Remove it from the panel.
	b.do(t, "click Remove on wordcount", 10*time.Second, chromedp.Click(chromedp.CSS(`button.loglevel-remove[data-logger="wordcount"]`)))
	b.waitText(t, "#loglevel-result", 30*time.Second, "Remove wordcount: done")
	if levels := logConfigOf(t, base, id); len(levels) != 0 {
		t.Fatalf("GET logconfig after the page removed wordcount: %+v", levels)
	}

	if msgs := b.problems(); len(msgs) > 0 {
		t.Errorf("the page reported %d problem(s):\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
}

// namedLoggerLevel is one logger of Storm's logconfig JSON.
type namedLoggerLevel struct {
	TargetLevel  string `json:"target_level"`
	Timeout      int32  `json:"timeout"`
	TimeoutEpoch int64  `json:"timeout_epoch"`
}

// logConfigOf is GET /api/v1/topology/:id/logconfig of a plaintext UI at
// base.
func logConfigOf(t *testing.T, base, id string) map[string]namedLoggerLevel {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/topology/" + id + "/logconfig")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body struct {
		NamedLoggerLevels map[string]namedLoggerLevel `json:"namedLoggerLevels"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &body) != nil {
		t.Fatalf("GET logconfig: %d %s", resp.StatusCode, raw)
	}
	return body.NamedLoggerLevels
}
