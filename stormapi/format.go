package stormapi

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// StormVersion is the Storm release whose UI REST API this package serves,
// reported as stormVersion: clients choose endpoints by it (Datadog's
// check reads /metrics from 1.2.0 on). Nimbus-HA's own version is
// nimbusHaVersion.
const StormVersion = "2.8.3"

// The words Storm's UI uses.
const (
	notApplicable  = "Not applicable"
	allTime        = ":all-time"
	allTimePretty  = "All time"
	statusLeader   = "Leader"
	statusFollower = "Not a Leader"
	statusOffline  = "Offline"
)

// statsWindows are the windows Storm reports tuple counts for, in its
// order (Datadog reads the first).
var statsWindows = []string{"600", "10800", "86400", allTime}

// prettyUptime formats seconds as Storm does: "33s", "3m 33s",
// "1d 0h 0m 0s".
func prettyUptime(secs int64) string {
	secs = max(secs, 0)
	d, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case d > 0:
		return fmt.Sprintf("%dd %dh %dm %ds", d, h, m, s)
	case h > 0:
		return fmt.Sprintf("%dh %dm %ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// statusName is Storm's word for a topology status: ACTIVE, INACTIVE,
// REBALANCING or KILLED.
func statusName(s clusterv1.TopologyStatus) string {
	return strings.TrimPrefix(s.String(), "TOPOLOGY_STATUS_")
}

// maxWindowSecs bounds a window: ten years.
const maxWindowSecs = 10 * 365 * 86400

// parseWindow reads the window query parameter: ":all-time" (the
// default) or a whole number of seconds. It returns the window and its
// hint ("All time", "10m 0s").
func parseWindow(q url.Values) (window, hint string, err error) {
	w := q.Get("window")
	if w == "" || w == allTime {
		return allTime, allTimePretty, nil
	}
	n, perr := strconv.ParseInt(w, 10, 64)
	if perr != nil || n < 1 || n > maxWindowSecs {
		return "", "", validate.Invalid("window", "want %s or a number of seconds from 1 to %d, got %q", allTime, maxWindowSecs, w)
	}
	return w, prettyUptime(n), nil
}

// windowPretty is a stats window's hint.
func windowPretty(w string) string {
	if w == allTime {
		return allTimePretty
	}
	n, _ := strconv.ParseInt(w, 10, 64)
	return prettyUptime(n)
}

// parseSys reads the sys query parameter: whether to show system
// components (ids starting "__"). Storm takes 1/0 and true/false.
func parseSys(q url.Values) (bool, error) {
	switch q.Get("sys") {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, validate.Invalid("sys", "want 1, 0, true or false, got %q", q.Get("sys"))
}

// parseWait reads the :wait-time of a kill or rebalance: whole seconds,
// 0 to a day (the RPCs' bound).
func parseWait(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || n > maxWaitSecs {
		return 0, validate.Invalid("wait-time", "want whole seconds from 0 to %d, got %q", maxWaitSecs, s)
	}
	return int32(n), nil
}

// maxWaitSecs is the longest wait a kill or rebalance may ask (package
// validate's bound on wait_secs).
const maxWaitSecs = 86400

// confValue is a conf value as Storm's JSON has it: a duration (Go's
// form, "20s") in the unit Storm's key has, seconds for keys ending
// ".secs" or ".sec" and milliseconds for the others (Storm's timeouts);
// else typedValue.
func confValue(key, text string) any {
	d, err := time.ParseDuration(text)
	if err != nil || typedValue(text) != text {
		return typedValue(text)
	}
	if strings.HasSuffix(key, ".secs") || strings.HasSuffix(key, ".sec") {
		return typedValue(strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	}
	return d.Milliseconds()
}

// typedValue is a conf value as Storm's JSON has it: a number or a bool
// when the text is exactly one, else the text.
func typedValue(text string) any {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil && strconv.FormatInt(n, 10) == text {
		return n
	}
	if f, err := strconv.ParseFloat(text, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == text {
		return f
	}
	switch text {
	case "true":
		return true
	case "false":
		return false
	}
	return text
}
