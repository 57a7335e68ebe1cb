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
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// TestWebUIBrowserThroughStormctlUI: with security on, a browser without
// a client certificate is refused by the nimbus's UI (401), and reaches it
// through `stormctl ui` run as alice: headless Chromium (no certificate)
// opens the URL it printed, whose token is traded for a cookie and leaves
// the address bar, and loads the cluster page, which names the leader and
// alice as the user; the topology pages offer alice what she may do: on
// her own topology, restarting workers and setting log levels; on bob's,
// which lists her in topology.users, log levels only. A worker's log link
// goes through the proxy's relay to its supervisor's logviewer (HTTPS,
// client certificates) and shows what the worker printed. A request
// without the cookie, or naming another Host (DNS rebinding), is refused
// and says why.
func TestWebUIBrowserThroughStormctlUI(t *testing.T) {
	chromium := requireChromium(t)
	sec := testcluster.NewSecurity(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSecurity(sec))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.users", "alice,bob"))
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	if _, err := c.StartSupervisor(testcluster.WithSlots(testcluster.FreePorts(t, 3)...)); err != nil {
		t.Fatal(err)
	}
	alice, bob := sec.Client(t, "alice"), sec.Client(t, "bob")
	aliceID := submitSleeperAs(t, alice, ps, "alicetopo", nil)
	bobID := submitSleeperAs(t, bob, ps, "bobtopo", map[string]string{"topology.users": "alice"})
	logged := &nimbusv1.TopologySpec{Name: "alicelogs", NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"/bin/sh", "-c", `echo "hello from the worker on $STORM_PORT"; exec sleep 600`}}
	submitted, err := sdkClient(t, alice, ps...).SubmitTopology(t.Context(), logged, strings.NewReader("code"), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	loggedID := submitted.GetTopologyId()

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
	proxy, printed := startUIProxy(t, config, nimbusUI)
	t.Logf("stormctl ui as alice serves %s at %s", nimbusUI, proxy)

	b := startBrowser(t, chromium)
	b.do(t, "open the URL stormctl ui printed", 30*time.Second, chromedp.Navigate(printed+"#/"))
	b.waitJS(t, "the cluster page naming the leader, alice and the topologies, the token gone from the address", 30*time.Second, `
		(() => {
			const leader = [...document.querySelectorAll('#nimbuses tbody tr')]
				.filter((r) => r.querySelector('td.status')?.textContent === 'Leader').map((r) => r.cells[0].textContent).join(',');
			const you = [...document.querySelectorAll('#cluster-summary .stat')]
				.find((s) => s.querySelector('.label')?.textContent === 'You')?.querySelector('.value')?.textContent ?? '';
			const topologies = [...document.querySelectorAll('a.topology-link')].map((a) => a.textContent).sort().join(',');
			return location.href + ' ' + leader + ' ' + you + ' ' + topologies;
		})()`, func(got string) error {
		if want := proxy + "#/ " + leader.Addr() + " alice alicelogs,alicetopo,bobtopo"; got != want {
			return fmt.Errorf("address, leader, user and topologies %q, want %q", got, want)
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

	// The worker's log link goes through the proxy to its supervisor's
	// logviewer, which wants alice's certificate.
	b.do(t, "open alicelogs's page", 30*time.Second, chromedp.Navigate(proxy+"#/topology/"+loggedID))
	var logHref string
	b.waitJS(t, "the worker's log link, through the proxy", 60*time.Second, `document.querySelector('#workers a.log-link')?.href ?? ''`, func(got string) error {
		if !strings.HasPrefix(got, proxy+"logviewer/") || !strings.Contains(got, "/api/v1/log?file=") {
			return fmt.Errorf("link %q, want one under %slogviewer/", got, proxy)
		}
		logHref = got
		return nil
	})
	b.do(t, "follow the log link", 30*time.Second, chromedp.Navigate(logHref))
	b.waitJS(t, "the worker's output in the page", 30*time.Second, `document.body?.innerText ?? ''`, func(got string) error {
		if !strings.HasPrefix(got, "hello from the worker on ") {
			return fmt.Errorf("page %q", got)
		}
		return nil
	})

	// Another local process, without the cookie, gets nothing: neither
	// the nimbus's answers nor the worker's log.
	for _, u := range []string{proxy + "api/v1/cluster/summary", logHref} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "open the URL that stormctl ui printed") {
			t.Errorf("GET %s without the cookie: %d %q, want 401 saying to open the printed URL", u, resp.StatusCode, body)
		}
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

var uiProxyURL = regexp.MustCompile(`^Open ((http://127\.0\.0\.1:[0-9]+/)\?token=[A-Za-z0-9_-]+) in a browser`)

// startUIProxy runs `stormctl --config config ui` on a free loopback port,
// forwarding to target, and returns its address and the URL it prints
// (the address with its token). The proxy stops (Ctrl-C) when the test
// ends.
func startUIProxy(t *testing.T, config, target string) (addr, printed string) {
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
		return m[2], m[1]
	case <-done:
		t.Fatalf("stormctl ui exited before printing its URL: %s", readOr(stderr.Name()))
	case <-time.After(20 * time.Second):
		t.Fatalf("stormctl ui printed no URL within 20 s: %s", readOr(stderr.Name()))
	}
	return "", ""
}
