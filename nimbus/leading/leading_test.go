package leading

import (
	"testing"
	"time"
)

// Reading heartbeats every heartbeatReadEvery, the leader sees a live
// supervisor's stamp change at least every h+p: that must stay short of the
// timeout for every valid pair (t > h), and a silent one must be found
// within 1.5 timeouts (t+p).
func TestHeartbeatReadEveryKeepsLiveSupervisorsAlive(t *testing.T) {
	for _, c := range []struct{ timeout, beat time.Duration }{
		{60 * time.Second, 5 * time.Second}, // the defaults
		{10 * time.Second, 5 * time.Second}, // every half timeout had no margin here
		{6 * time.Second, 5 * time.Second},
		{2 * time.Second, time.Second},
	} {
		p := heartbeatReadEvery(c.timeout, c.beat)
		if p <= 0 {
			t.Fatalf("t %v, h %v: period %v", c.timeout, c.beat, p)
		}
		if gap := c.beat + p; gap >= c.timeout {
			t.Errorf("t %v, h %v: read every %v, a live supervisor seen to change only every %v", c.timeout, c.beat, p, gap)
		}
		if found := c.timeout + p; found > c.timeout*3/2 {
			t.Errorf("t %v, h %v: read every %v, a silent supervisor found only after %v", c.timeout, c.beat, p, found)
		}
	}
}
