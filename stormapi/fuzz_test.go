package stormapi

import (
	"net/url"
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// FuzzRequestInput: whatever a caller sends as a window, a sys flag, a
// wait time or a rebalance body, the API either accepts a value within
// its bounds or refuses with a *validate.Error naming the field (a 400),
// and never panics.
func FuzzRequestInput(f *testing.F) {
	f.Add(":all-time", "1", "30", `{"rebalanceOptions":{"numWorkers":3,"executors":{"split":"6"}}}`)
	f.Add("600", "true", "0", ``)
	f.Add("-1", "x", "abc", `not json`)
	f.Add("1e9", "", "86401", `{"rebalanceOptions":{"executors":{"":0}}}`)
	f.Fuzz(func(t *testing.T, window, sys, wait, body string) {
		q := url.Values{"window": {window}, "sys": {sys}}
		if w, _, err := parseWindow(q); err != nil {
			wantField(t, err, "window")
		} else if w == "" {
			t.Errorf("window %q accepted as empty", window)
		}
		if _, err := parseSys(q); err != nil {
			wantField(t, err, "sys")
		}
		if n, err := parseWait(wait); err != nil {
			wantField(t, err, "wait-time")
		} else if n < 0 || n > maxWaitSecs {
			t.Errorf("wait %q accepted as %d", wait, n)
		}
		req := &nimbusv1.RebalanceTopologyRequest{}
		if err := readRebalance(bodyRequest(body), req); err != nil {
			wantField(t, err, "")
			return
		}
		if req.NumWorkers != nil && req.GetNumWorkers() < 1 {
			t.Errorf("body %q: numWorkers %d accepted", body, req.GetNumWorkers())
		}
		for c, n := range req.GetComponentParallelism() {
			if n < 1 {
				t.Errorf("body %q: %s = %d accepted", body, c, n)
			}
		}
	})
}

// wantField fails unless err is a *validate.Error naming a field that
// starts with prefix.
func wantField(t *testing.T, err error, prefix string) {
	t.Helper()
	v, ok := err.(*validate.Error)
	if !ok || v.Field == "" || !strings.HasPrefix(v.Field, prefix) {
		t.Errorf("%v: want a *validate.Error naming %s", err, prefix)
	}
}
