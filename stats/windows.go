package stats

import (
	"fmt"
	"strconv"
)

// Window is one of Storm's windows, in seconds; AllTime is 0.
type Window int64

// Storm's windows.
const (
	TenMinutes Window = 600
	ThreeHours Window = 10800
	OneDay     Window = 86400
	AllTime    Window = 0
)

// Windows are Storm's windows in its order (Datadog's check reads the
// first).
var Windows = []Window{TenMinutes, ThreeHours, OneDay, AllTime}

// allTimeName is how Storm names the all-time window.
const allTimeName = ":all-time"

// ErrUnknownWindow is a window Storm does not have.
var ErrUnknownWindow = fmt.Errorf("stats: unknown window: want 600, 10800, 86400 or %s", allTimeName)

// ParseWindow reads a window as Storm writes it: "600", "10800", "86400"
// or ":all-time"; "" is all time.
func ParseWindow(s string) (Window, error) {
	if s == "" || s == allTimeName {
		return AllTime, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		for _, w := range Windows {
			if w != AllTime && int64(w) == n {
				return w, nil
			}
		}
	}
	return 0, ErrUnknownWindow
}

// String is the window as Storm writes it.
func (w Window) String() string {
	if w == AllTime {
		return allTimeName
	}
	return strconv.FormatInt(int64(w), 10)
}

// ringSpec is how a timed window is kept: n buckets of width
// milliseconds, so a window's sum covers between (n-1) and n widths (the
// current bucket is partial): 20 s buckets for ten minutes, 10 minutes
// for three hours, an hour for a day.
type ringSpec struct {
	window Window
	width  int64 // ms
	n      int
}

var ringSpecs = [3]ringSpec{
	{TenMinutes, 20_000, 30},
	{ThreeHours, 600_000, 18},
	{OneDay, 3_600_000, 24},
}

// ringIndex is the ring that keeps timed window w.
func ringIndex(w Window) int {
	for i, s := range ringSpecs {
		if s.window == w {
			return i
		}
	}
	return -1
}

// keepMs is how long a series that reports nothing more is kept: its
// longest window has rolled past its last report by then.
const keepMs = int64(OneDay)*1000 + 3_600_000

// ring is one window's buckets; a bucket holds the share of the
// increases that happened within its width, and whether any report's
// interval touched it (a window without one has no data, not zeros).
type ring struct {
	epoch    []int64 // the bucket's time / width; a slot holding another epoch is stale
	val      []vec
	reported []bool
}

// add spreads d evenly over (from, to] milliseconds, the time the
// increase happened in; what falls before the ring's reach is older than
// its window and left out. A zero interval puts d at to.
func (r *ring) add(spec ringSpec, from, to int64, d vec) {
	if r.epoch == nil {
		r.epoch, r.val, r.reported = make([]int64, spec.n), make([]vec, spec.n), make([]bool, spec.n)
		for i := range r.epoch {
			r.epoch[i] = -1
		}
	}
	last := epochOf(spec, to)
	if to <= from {
		r.put(spec, last, d)
		return
	}
	span := float64(to - from)
	for e := max(from/spec.width, last-int64(spec.n)+1); e <= last; e++ {
		overlap := min(to, (e+1)*spec.width) - max(from, e*spec.width)
		if overlap > 0 {
			r.put(spec, e, d.scaled(float64(overlap)/span))
		}
	}
}

// epochOf is the bucket holding time t: bucket e covers the times in
// (e*width, (e+1)*width], so a report at a bucket's end falls in it.
func epochOf(spec ringSpec, t int64) int64 {
	return (t - 1) / spec.width
}

// put adds v to the bucket of epoch e, reusing its slot if stale.
func (r *ring) put(spec ringSpec, e int64, v vec) {
	i := int(e % int64(spec.n))
	if r.epoch[i] != e {
		if r.epoch[i] > e {
			return // older than the slot's bucket: out of the window
		}
		r.epoch[i], r.val[i], r.reported[i] = e, vec{}, false
	}
	r.val[i] = r.val[i].plus(v)
	r.reported[i] = true
}

// sum is the window's total at now and whether any report fell in it.
func (r *ring) sum(spec ringSpec, now int64) (vec, bool) {
	var total vec
	reported := false
	cur := epochOf(spec, now)
	for i, e := range r.epoch {
		if e > cur-int64(spec.n) && e <= cur {
			total = total.plus(r.val[i])
			reported = reported || r.reported[i]
		}
	}
	return total, reported
}
