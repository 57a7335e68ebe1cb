package integration

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// TestWebUIBrowserLogLink: in headless Chromium, the topology page links
// its worker to its log, and following the link shows what the worker
// printed, served by its supervisor's logviewer.
func TestWebUIBrowserLogLink(t *testing.T) {
	chromium := requireChromium(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr())
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 15*time.Second)
	c.StartSupervisors(t, 1)
	cl := newClient(t, c, ps...)
	spec := &nimbusv1.TopologySpec{Name: "logged", NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
		WorkerCommand: []string{"/bin/sh", "-c", `echo "hello from the worker on $STORM_PORT"; exec sleep 600`}}
	data := randomBytes(t, 100)
	resp, err := cl.SubmitTopology(t.Context(), spec, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTopologyId()

	b := startBrowser(t, chromium)
	b.do(t, "open the topology page", 30*time.Second, chromedp.Navigate(ps[0].UIURL()+"/#/topology/"+url.PathEscape(id)))
	var href string
	b.waitJS(t, "the worker's log link", 60*time.Second, `document.querySelector('#workers a.log-link')?.href ?? ''`, func(got string) error {
		if !strings.Contains(got, "/api/v1/log?file=") {
			return fmt.Errorf("link %q", got)
		}
		href = got
		return nil
	})
	b.do(t, "follow the log link", 30*time.Second, chromedp.Navigate(href))
	b.waitJS(t, "the worker's output in the page", 30*time.Second, `document.body?.innerText ?? ''`, func(got string) error {
		if !strings.HasPrefix(got, "hello from the worker on ") {
			return fmt.Errorf("page %q", got)
		}
		return nil
	})
}
