package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// TestWebUIBrowser drives the web UI (package webui) in a real, headless
// Chromium against a follower of a 3-nimbus cluster with one supervisor
// running the example topology: the cluster page names the same leader as
// the cluster does, the topology page shows it ACTIVE with its workers'
// tuple counts (not zero), and Deactivate,
// confirmed in the page's dialog, makes it INACTIVE in the page and in
// the cluster (the follower forwards the action to the leader); "Make
// leader" on the other follower hands leadership to it. The cluster
// page's Blobs table lists two blobs created through gRPC with their
// version, size and replication as the follower's cache has them: one
// held by its factor of nimbuses, one whose factor was raised past the
// nimbuses there are, shown UNDER_REPLICATED and highlighted; which
// topologies use a blob the follower leaves to the leader, whose REST
// answer says none. The page
// must raise no uncaught exception and break no rule of its
// Content-Security-Policy. On failure a full-page screenshot is kept in
// a directory that outlives the test, and its path is logged.
func TestWebUIBrowser(t *testing.T) {
	chromium := requireChromium(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr())
	ps := c.StartNimbuses(t, 3, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	c.StartSupervisors(t, 1)
	cl := newClient(t, c, ps...)
	follower := testcluster.Without(ps, leader)[0]
	base := follower.UIURL()
	if strings.HasSuffix(base, "://") {
		t.Fatalf("%s serves no web UI (no ui address in its ready line)", follower.Name)
	}

	const name = "webui"
	id := submitExample(t, cl, name, 1)
	// Two more make the topology list long enough to be sent gzipped
	// (stormapi/gzip.go), which the browser must decode.
	for _, other := range []string{"webui-b", "webui-c"} {
		submitExample(t, cl, other, 1)
	}
	t.Logf("submitted %s as %s; the browser opens %s on %s (leader %s)", name, id, base, follower.Name, leader.Name)
	createBrowserBlobs(t, cl)

	b := startBrowser(t, chromium)
	b.do(t, "open the cluster page", 30*time.Second, chromedp.Navigate(base+"/#/"))

	// The leader row of #nimbuses is the cluster's leader.
	b.waitJS(t, "the cluster page's leader row naming "+leader.Addr(), 30*time.Second, `
		(() => {
			const rows = [...document.querySelectorAll('#nimbuses tbody tr')]
				.filter((r) => r.querySelector('td.status')?.textContent === 'Leader');
			return rows.map((r) => r.cells[0].textContent).join(',');
		})()`, func(got string) error {
		if got != leader.Addr() {
			return fmt.Errorf("leader rows %q, want %q", got, leader.Addr())
		}
		return nil
	})

	// The blobs, as the follower knows them: which topologies use them
	// only the leader knows.
	b.waitJS(t, "the Blobs table listing both blobs", 30*time.Second, `
		(() => [...document.querySelectorAll('#blobs tbody tr')].map((r) =>
			[...r.cells].slice(0, 7).map((c) => c.textContent + (c.classList.contains('not-ok') ? '!' : '')).join('|')).join('\n'))()`,
		func(got string) error {
			want := "webui-dict.txt|1|2.9 KiB|3 / 3|OK|—|known to the leader\n" +
				"webui-model.bin|1|10 B|3 / 5!|UNDER_REPLICATED!|—|known to the leader"
			if got != want {
				return fmt.Errorf("#blobs rows (cells|, ! when highlighted):\n%s\nwant\n%s", got, want)
			}
			return nil
		})

	// The leader knows which topologies use them: none ([], not null).
	if code, body, err := httpGet(leader.UIURL()+"/api/v1/blobstore/webui-dict.txt", nil); err != nil || code != http.StatusOK ||
		!strings.Contains(body, `"usedBy":[]`) || !strings.Contains(body, `"replicationCount":3`) {
		t.Errorf("GET blobstore/webui-dict.txt on the leader: %d %s %v, want usedBy [] and 3 replicas", code, body, err)
	}

	// The topology list came gzipped and decoded: fewer bytes on the wire
	// than in the body, and the page lists all three.
	b.waitJS(t, "topology/summary received gzipped and listing 3 topologies", 30*time.Second, `
		(() => {
			const e = performance.getEntriesByType('resource').filter((r) => r.name.includes('api/v1/topology/summary')).pop();
			const links = document.querySelectorAll('a.topology-link').length;
			return e ? e.encodedBodySize + ' ' + e.decodedBodySize + ' ' + links : 'none';
		})()`, func(got string) error {
		var encoded, decoded, links int
		if _, err := fmt.Sscan(got, &encoded, &decoded, &links); err != nil {
			return fmt.Errorf("resource timing %q: %v", got, err)
		}
		if encoded <= 0 || encoded >= decoded || links != 3 {
			return fmt.Errorf("topology/summary: %d bytes received for %d decoded, %d topology links; want fewer received, 3 links", encoded, decoded, links)
		}
		return nil
	})

	// The topology's link opens its page, which shows it ACTIVE.
	b.waitText(t, "a.topology-link", 30*time.Second, name)
	b.do(t, "click the topology's link", 10*time.Second, chromedp.Click(chromedp.CSS("a.topology-link")))
	b.waitText(t, "#topology-status", 30*time.Second, "ACTIVE")

	// Its workers' counts reach the page: the topology's tuples emitted in
	// the ten-minute window and the split bolt's executed tuples are not
	// zero (the example names no spouts: every component is a bolt).
	b.waitJS(t, "non-zero tuple counts on the topology page", 60*time.Second, `
		(() => {
			const window600 = document.querySelector('#topology-stats tbody tr')?.cells[1]?.textContent || '-';
			const split = [...document.querySelectorAll('#bolts tbody tr')].find((r) => r.cells[0]?.textContent === 'split');
			return window600 + ' ' + (split?.cells[3]?.textContent || '-');
		})()`, func(got string) error {
		var window600, executed int
		if _, err := fmt.Sscan(got, &window600, &executed); err != nil || window600 <= 0 || executed <= 0 {
			return fmt.Errorf("the topology's 600 s emitted and split's executed %q; want non-zero counts", got)
		}
		return nil
	})

	// Deactivate, confirmed in the dialog.
	b.do(t, "click Deactivate", 10*time.Second, chromedp.Click(chromedp.CSS("#action-deactivate")))
	b.do(t, "the confirmation dialog", 10*time.Second, chromedp.WaitVisible(chromedp.CSS("#confirm-ok")))
	b.do(t, "confirm", 10*time.Second, chromedp.Click(chromedp.CSS("#confirm-ok")))
	b.waitJS(t, "the action's result", 30*time.Second, `document.querySelector('#action-result')?.textContent ?? ''`,
		func(got string) error {
			if !strings.Contains(got, "success") {
				return fmt.Errorf("#action-result says %q", got)
			}
			return nil
		})
	b.waitText(t, "#topology-status", 30*time.Second, "INACTIVE")

	// The cluster agrees.
	testcluster.WaitFor(t, 10*time.Second, "the topology INACTIVE through gRPC", func() error {
		info, err := cl.GetTopologyInfo(t.Context(), name)
		if err != nil {
			return err
		}
		if got := info.GetTopology().GetStatus(); got != clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE {
			return fmt.Errorf("status %v", got)
		}
		return nil
	})

	// Back on the cluster page, "Make leader" on the other follower,
	// confirmed, hands leadership to it.
	next := testcluster.Without(ps, leader, follower)[0]
	b.do(t, "open the cluster page again", 30*time.Second, chromedp.Navigate(base+"/#/"))
	button := fmt.Sprintf(`button.handover[data-to=%q]`, next.Addr())
	b.do(t, "click Make leader on "+next.Name, 30*time.Second, chromedp.Click(chromedp.CSS(button)))
	b.do(t, "the confirmation dialog", 10*time.Second, chromedp.WaitVisible(chromedp.CSS("#confirm-ok")))
	b.do(t, "confirm", 10*time.Second, chromedp.Click(chromedp.CSS("#confirm-ok")))
	b.waitJS(t, "the hand-over's result", 30*time.Second, `document.querySelector('#action-result')?.textContent ?? ''`,
		func(got string) error {
			if !strings.Contains(got, next.Addr()+" leads") {
				return fmt.Errorf("#action-result says %q", got)
			}
			return nil
		})
	if _, now := c.WaitLeader(t, ps, 10*time.Second); now != next {
		t.Errorf("after Make leader on %s, %s leads", next.Name, now.Name)
	}

	if msgs := b.problems(); len(msgs) > 0 {
		t.Errorf("the page reported %d problem(s):\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
}

// createBrowserBlobs creates the blobs TestWebUIBrowser's cluster page
// lists: webui-dict.txt (3,000 bytes, held by the 3 nimbuses its factor
// asks for) and webui-model.bin (10 bytes) whose factor is then raised to
// 5, more nimbuses than there are.
func createBrowserBlobs(t *testing.T, cl *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for key, content := range map[string]string{"webui-dict.txt": strings.Repeat("word\n", 600), "webui-model.bin": "0123456789"} {
		resp, err := cl.CreateBlob(ctx, key, strings.NewReader(content), client.BlobOptions{})
		if err != nil {
			t.Fatalf("create blob %s: %v", key, err)
		}
		if resp.GetReplicationWaitTimedOut() {
			t.Fatalf("create blob %s: the replication wait timed out", key)
		}
	}
	if _, err := cl.SetBlobReplication(ctx, "webui-model.bin", 5); err != nil {
		t.Fatalf("raise webui-model.bin's replication: %v", err)
	}
}

// requireChromium fails the test when no chromium is installed, and
// returns its path.
func requireChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium (%v); run `make test`, which installs it with scripts/install-test-deps.sh", err)
	}
	return path
}

// browser is one headless Chromium with one tab, for one test.
type browser struct {
	ctx context.Context // the tab; ends when the test's cleanup runs

	mu       sync.Mutex
	messages []string // uncaught exceptions and CSP violations
}

// startBrowser starts headless Chromium at path with one tab. The tab's
// context is not the test's, which ends before cleanups run: at cleanup
// a failed test first gets its screenshot, then the browser stops.
func startBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root
		chromedp.WindowSize(1280, 1024),
	)
	root, cancelRoot := context.WithTimeout(context.Background(), 5*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{ctx: ctx}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser to exit
		cancelRoot()
		wg.Wait()
	})

	// The first action starts the browser and opens the tab, which then live
	// as long as its context: so it runs on ctx itself, bounded by root.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	console := chromedp.Console(ctx)
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				b.mu.Lock()
				b.messages = append(b.messages, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { // runs before the browser stops
		if t.Failed() {
			b.screenshot(t)
		}
	})
	return b
}

// do runs steps in the tab, waiting at most timeout, and fails the test
// if they fail.
func (b *browser) do(t *testing.T, what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// waitJS evaluates expr (a JavaScript expression giving a string) until
// check accepts its value, for at most timeout.
func (b *browser) waitJS(t *testing.T, what string, timeout time.Duration, expr string, check func(string) error) {
	t.Helper()
	testcluster.WaitFor(t, timeout, what, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			return err
		}
		return check(got)
	})
}

// waitText waits until the first element matching the CSS selector sel
// has the text want.
func (b *browser) waitText(t *testing.T, sel string, timeout time.Duration, want string) {
	t.Helper()
	expr := fmt.Sprintf(`document.querySelector(%q)?.textContent ?? '(no %s)'`, sel, sel)
	b.waitJS(t, sel+" showing "+want, timeout, expr, func(got string) error {
		if got != want {
			return fmt.Errorf("%s shows %q", sel, got)
		}
		return nil
	})
}

// problems are the exceptions and CSP violations the page reported.
func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.messages...)
}

// screenshot keeps a full-page PNG of the tab in a new directory that
// outlives the test, and logs its path.
func (b *browser) screenshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("browser: no screenshot: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "webui-shot-*")
	if err != nil {
		t.Logf("browser: no screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, "page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("browser: no screenshot: %v", err)
		return
	}
	url, _ := chromedp.Run(ctx, chromedp.Location())
	t.Logf("browser: a screenshot of %s is in %s", url, path)
}
