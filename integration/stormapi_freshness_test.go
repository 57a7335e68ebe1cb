package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// TestStormAPIFreshness: a nimbus cut off from ZooKeeper keeps answering
// from its caches and says how stale they are (cacheAgeMs grows, as does
// the nimbus's own count), and says it is fresh again once reconnected.
func TestStormAPIFreshness(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	proxy := testcluster.StartProxy(t, z.Addr())
	c := testcluster.New(t, proxy.Addr(), testcluster.WithSessionTimeout(6*time.Second))
	n := c.StartNimbuses(t, 1)[0]
	c.WaitLeader(t, []*testcluster.Process{n}, 10*time.Second)
	api := newStormAPI(t, c, n)
	type freshness struct {
		CacheAgeMs        int64  `json:"cacheAgeMs"`
		LeaderlessSeconds int64  `json:"leaderlessSeconds"`
		Leader            string `json:"leader"`
	}
	fresh := func() error {
		var f freshness
		if err := api.get(t, "/api/v1/cluster/summary", &f); err != nil {
			return err
		}
		if f.CacheAgeMs != 0 || f.LeaderlessSeconds != 0 || f.Leader != n.Addr() {
			return fmt.Errorf("%+v, want a fresh answer naming %s as leader", f, n.Addr())
		}
		return nil
	}
	testcluster.WaitFor(t, 10*time.Second, "a fresh answer", fresh)

	proxy.Cut()
	var first int64
	testcluster.WaitFor(t, 20*time.Second, "the answer to say its caches are stale", func() error {
		var f freshness
		if err := api.get(t, "/api/v1/cluster/summary", &f); err != nil {
			return err
		}
		if f.CacheAgeMs == 0 {
			return fmt.Errorf("%+v, want cacheAgeMs > 0", f)
		}
		first = f.CacheAgeMs
		return nil
	})
	testcluster.WaitFor(t, 10*time.Second, "cacheAgeMs to grow while cut", func() error {
		var f freshness
		if err := api.get(t, "/api/v1/topology/summary", &f); err != nil {
			return err
		}
		if f.CacheAgeMs <= first {
			return fmt.Errorf("cacheAgeMs %d, not more than %d", f.CacheAgeMs, first)
		}
		return nil
	})

	proxy.Restore()
	testcluster.WaitFor(t, 30*time.Second, "a fresh answer after reconnecting", fresh)
}
