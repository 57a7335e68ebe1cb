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
	return countsOf(plusFields(c.fields(), o.fields()))
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
	var f [8]uint64
	for i, x := range v {
		if x > 0 {
			f[i] = uint64(math.Round(x))
		}
	}
	return countsOf(f)
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

// increase is cur less last, field by field; a counter that went down
// has no increase.
func increase(cur, last Counts) Counts {
	return countsOf(minusFields(cur.fields(), last.fields()))
}

func (c Counts) fields() [8]uint64 {
	return [8]uint64{c.Emitted, c.Transferred, c.Acked, c.Failed, c.Executed,
		c.CompleteLatencyUs, c.ProcessLatencyUs, c.ExecuteLatencyUs}
}

// countsOf is the Counts of fields in fields' order.
func countsOf(f [8]uint64) Counts {
	return Counts{Emitted: f[0], Transferred: f[1], Acked: f[2], Failed: f[3], Executed: f[4],
		CompleteLatencyUs: f[5], ProcessLatencyUs: f[6], ExecuteLatencyUs: f[7]}
}
