package stats

import "math"

// Counts are Storm's counters for one stream, component or topology, and
// the latency sums their averages come from, in microseconds: complete
// and process latency are summed over acked tuples, execute latency over
// executed ones (cluster.v1.StreamStats's meaning).
type Counts struct {
	Emitted, Transferred, Acked, Failed, Executed         uint64
	CompleteLatencyUs, ProcessLatencyUs, ExecuteLatencyUs uint64
}

// Add returns c plus o.
func (c Counts) Add(o Counts) Counts {
	a, b := c.fields(), o.fields()
	for i := range a {
		a[i] += b[i]
	}
	return Counts{Emitted: a[0], Transferred: a[1], Acked: a[2], Failed: a[3], Executed: a[4],
		CompleteLatencyUs: a[5], ProcessLatencyUs: a[6], ExecuteLatencyUs: a[7]}
}

// CompleteLatencyMs is the average complete latency in milliseconds; 0
// with nothing acked.
func (c Counts) CompleteLatencyMs() float64 { return avgMs(c.CompleteLatencyUs, c.Acked) }

// ProcessLatencyMs is the average process latency in milliseconds; 0 with
// nothing acked.
func (c Counts) ProcessLatencyMs() float64 { return avgMs(c.ProcessLatencyUs, c.Acked) }

// ExecuteLatencyMs is the average execute latency in milliseconds; 0 with
// nothing executed.
func (c Counts) ExecuteLatencyMs() float64 { return avgMs(c.ExecuteLatencyUs, c.Executed) }

func avgMs(sumUs, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(sumUs) / float64(n) / 1000
}

// vec is Counts as numbers a bucket can hold a share of: an increase
// spread over several buckets leaves each a fraction.
type vec [8]float64

func (c Counts) vec() vec {
	return vec{float64(c.Emitted), float64(c.Transferred), float64(c.Acked), float64(c.Failed), float64(c.Executed),
		float64(c.CompleteLatencyUs), float64(c.ProcessLatencyUs), float64(c.ExecuteLatencyUs)}
}

// fromVec rounds v to whole counts.
func fromVec(v vec) Counts {
	r := func(f float64) uint64 {
		if f <= 0 {
			return 0
		}
		return uint64(math.Round(f))
	}
	return Counts{Emitted: r(v[0]), Transferred: r(v[1]), Acked: r(v[2]), Failed: r(v[3]), Executed: r(v[4]),
		CompleteLatencyUs: r(v[5]), ProcessLatencyUs: r(v[6]), ExecuteLatencyUs: r(v[7])}
}

func (v vec) plus(o vec) vec {
	for i := range v {
		v[i] += o[i]
	}
	return v
}

func (v vec) scaled(f float64) vec {
	for i := range v {
		v[i] *= f
	}
	return v
}

// increase is cur less last, field by field; ok is false if any counter
// went down, which only a new run does.
func increase(cur, last Counts) (Counts, bool) {
	c, l := cur.fields(), last.fields()
	var d [8]uint64
	for i := range c {
		if c[i] < l[i] {
			return Counts{}, false
		}
		d[i] = c[i] - l[i]
	}
	return Counts{Emitted: d[0], Transferred: d[1], Acked: d[2], Failed: d[3], Executed: d[4],
		CompleteLatencyUs: d[5], ProcessLatencyUs: d[6], ExecuteLatencyUs: d[7]}, true
}

func (c Counts) fields() [8]uint64 {
	return [8]uint64{c.Emitted, c.Transferred, c.Acked, c.Failed, c.Executed,
		c.CompleteLatencyUs, c.ProcessLatencyUs, c.ExecuteLatencyUs}
}
