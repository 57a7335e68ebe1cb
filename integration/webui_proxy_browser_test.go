package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// TestWebUIBrowserThroughStormctlUI: with security on, a browser without
// a client certificate is refused by the nimbus's UI (401), and reaches it
// through `stormctl ui` run as alice: headless Chromium (no certificate)
// loads the cluster page, which names the leader and alice as the user,
// and the topology pages offer alice what she may do: on her own
// topology, restarting workers and setting log levels; on bob's, which
// lists her in topology.users, log levels only. A request to the proxy
// naming another Host (DNS rebinding) is refused and says so.
func TestWebUIBrowserThroughStormctlUI(t *testing.T) {
	chromium := requireChromium(t)
	sec := testcluster.NewSecurity(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSecurity(sec))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.users", "alice,bob"))
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	alice, bob := sec.Client(t, "alice"), sec.Client(t, "bob")
	aliceID := submitSleeperAs(t, alice, ps, "alicetopo", nil)
	bobID := submitSleeperAs(t, bob, ps, "bobtopo", map[string]string{"topology.users": "alice"})

	nimbusUI := leader.UIURL()
	if !strings.HasPrefix(nimbusUI, "https://") {
		t.Fatalf("the UI of %s is %s, want HTTPS", leader.Name, nimbusUI)
	}
	resp, err := c.UIClientAs(t, sec.Anonymous()).Get(nimbusUI + "/api/v1/cluster/summary")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the nimbus's UI without a client certificate: %d, want 401", resp.StatusCode)
	}

	config, err := alice.WriteConfig(t.TempDir(), testcluster.Addrs(ps...))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startUIProxy(t, config, nimbusUI)
	t.Logf("stormctl ui as alice serves %s at %s", nimbusUI, proxy)

	b := startBrowser(t, chromium)
	b.do(t, "open the cluster page through the proxy", 30*time.Second, chromedp.Navigate(proxy+"#/"))
	b.waitJS(t, "the cluster page naming the leader, alice and both topologies", 30*time.Second, `
		(() => {
			const leader = [...document.querySelectorAll('#nimbuses tbody tr')]
				.filter((r) => r.querySelector('td.status')?.textContent === 'Leader').map((r) => r.cells[0].textContent).join(',');
			const you = [...document.querySelectorAll('#cluster-summary .stat')]
				.find((s) => s.querySelector('.label')?.textContent === 'You')?.querySelector('.value')?.textContent ?? '';
			const topologies = [...document.querySelectorAll('a.topology-link')].map((a) => a.textContent).sort().join(',');
			return leader + ' ' + you + ' ' + topologies;
		})()`, func(got string) error {
		if want := leader.Addr() + " alice alicetopo,bobtopo"; got != want {
			return fmt.Errorf("leader, user and topologies %q, want %q", got, want)
		}
		return nil
	})

	// What alice is offered on each topology's page.
	offers := `
		(() => {
			if (document.querySelector('#topology-status')?.textContent !== 'ACTIVE') return 'loading';
			const restart = [...document.querySelectorAll('#workers thead th')].some((th) => th.textContent === 'Restart');
			const levels = document.querySelector('#loglevel-form')?.hidden === false;
			return 'restart=' + restart + ' levels=' + levels;
		})()`
	for _, tc := range []struct{ name, id, want string }{
		{"alicetopo", aliceID, "restart=true levels=true"},
		{"bobtopo", bobID, "restart=false levels=true"},
	} {
		b.do(t, "open "+tc.name+"'s page", 30*time.Second, chromedp.Navigate(proxy+"#/topology/"+tc.id))
		b.waitJS(t, "what alice is offered on "+tc.name, 30*time.Second, offers, func(got string) error {
			if got != tc.want {
				return fmt.Errorf("%s's page offers %q, want %q", tc.name, got, tc.want)
			}
			return nil
		})
	}

	// A page that rebinds its own name to the proxy's address is refused.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, proxy+"api/v1/cluster/summary", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example:" + req.URL.Port()
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), req.Host) || json.Valid(body) {
		t.Errorf("Host %s through the proxy: %d %q, want 403 from the proxy naming it", req.Host, resp.StatusCode, body)
	}

	if msgs := b.problems(); len(msgs) > 0 {
		t.Errorf("the page reported %d problem(s):\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
}

// submitSleeperAs submits a one-worker topology of sleepers named name as
// id, with conf, and returns its id.
func submitSleeperAs(t *testing.T, id testcluster.Identity, ps []*testcluster.Process, name string, conf map[string]string) string {
	t.Helper()
	spec := sleepSpec(name, 1)
	spec.Config = conf
	resp, err := sdkClient(t, id, ps...).SubmitTopology(t.Context(), spec, strings.NewReader("code"), 4, nil)
	if err != nil {
		t.Fatalf("%s submits %s: %v", id.Principal, name, err)
	}
	return resp.GetTopologyId()
}

var uiProxyURL = regexp.MustCompile(`^Open (http://127\.0\.0\.1:[0-9]+/) in a browser`)

// startUIProxy runs `stormctl --config config ui` on a free loopback port,
// forwarding to target, and returns the URL it prints. The proxy stops
// (Ctrl-C) when the test ends.
func startUIProxy(t *testing.T, config, target string) string {
	t.Helper()
	cmd := exec.Command(testcluster.Bin(t).Path("stormctl"), "--config", config, "ui", "--port", "0", "--target", target)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close() // the process has its own copy
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	done := make(chan struct{})
	go func() { // ends when the proxy exits and its stdout closes
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = cmd.Wait()
	})
	select {
	case line := <-lines:
		m := uiProxyURL.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("stormctl ui printed %q, want its URL (stderr: %s)", line, readOr(stderr.Name()))
		}
		return m[1]
	case <-done:
		t.Fatalf("stormctl ui exited before printing its URL: %s", readOr(stderr.Name()))
	case <-time.After(20 * time.Second):
		t.Fatalf("stormctl ui printed no URL within 20 s: %s", readOr(stderr.Name()))
	}
	return ""
}
