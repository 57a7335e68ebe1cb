package stats

import (
	"cmp"
	"slices"
)

// A run's accounting: how the cumulative counts a worker run reports
// become increases, each counted once. A supervisor short of heartbeat
// room may carry some streams folded into their component's stream ""
// row, or leave a whole component out; a worker may leave a stream out of
// one report. So, within a run:
//   - each key's counted value is kept, even while the key is missing;
//   - a component that ever came with a "" row is pooled: its counts are accounted as a whole, the report's
//     total for it against everything counted of it, so counts that moved
//     between its rows are not counted again; the rows reported in the
//     component's previous report take the increase first, in name order;
//   - a counter that went down is a new base with no increase.

// run is what was counted of one worker run.
type run struct {
	counted map[Key]Counts // per key, what was counted of it (kept while it is missing)
	present map[Key]bool   // the keys of each component's last report
	pooled  map[string]bool
	// evicted is, per component, what was counted of its keys whose
	// series were evicted or swept: part of what was counted of it.
	evicted map[string]Counts
}

func newRun() run {
	return run{counted: map[Key]Counts{}, present: map[Key]bool{}, pooled: map[string]bool{}, evicted: map[string]Counts{}}
}

// account returns the increase of each of rows, the tracked rows of one
// report, and records them as counted.
func (r *run) account(rows []StreamCounts) []Counts {
	d := make([]Counts, len(rows))
	byComponent := map[string][]int{}
	for i, sc := range rows {
		byComponent[sc.Component] = append(byComponent[sc.Component], i)
		if sc.Stream == "" {
			r.pooled[sc.Component] = true
		}
	}
	for c, idx := range byComponent {
		if r.pooled[c] {
			r.accountPooled(c, rows, idx, d)
		} else {
			for _, i := range idx {
				k := rows[i].Key
				d[i] = increase(rows[i].Counts, r.counted[k])
				r.counted[k] = rows[i].Counts // a counter that went down is the new base
			}
		}
		for k := range r.present {
			if k.Component == c {
				delete(r.present, k)
			}
		}
		for _, i := range idx {
			r.present[rows[i].Key] = true
		}
	}
	return d
}

// accountPooled accounts component c's rows (rows[idx]) as a whole: the
// increase is what its rows hold now beyond all that was counted of it,
// given to each row up to its own rise, rows of its previous report first.
func (r *run) accountPooled(c string, rows []StreamCounts, idx []int, d []Counts) {
	var total, counted [8]uint64
	for _, i := range idx {
		total = plusFields(total, rows[i].fields())
	}
	for k, n := range r.counted {
		if k.Component == c {
			counted = plusFields(counted, n.fields())
		}
	}
	counted = plusFields(counted, r.evicted[c].fields())
	avail := minusFields(total, counted)
	slices.SortFunc(idx, func(x, y int) int {
		px, py := r.present[rows[x].Key], r.present[rows[y].Key]
		if px != py {
			if px {
				return -1
			}
			return 1
		}
		return cmp.Compare(rows[x].Stream, rows[y].Stream)
	})
	for _, i := range idx {
		k := rows[i].Key
		was := r.counted[k].fields()
		want := minusFields(rows[i].fields(), was)
		var got [8]uint64
		for f := range got {
			got[f] = min(want[f], avail[f])
			avail[f] -= got[f]
		}
		d[i] = countsOf(got)
		r.counted[k] = countsOf(plusFields(was, got))
	}
}

// forget drops key k's counted value. Of a pooled component, whose rows
// may hold k's counts under another key, it stays in the component's, so
// they are not counted again; of another, k was simply not reported for a
// while, and if it comes back it counts from zero.
func (r *run) forget(k Key) {
	if r.pooled[k.Component] {
		r.evicted[k.Component] = r.evicted[k.Component].Add(r.counted[k])
	}
	delete(r.counted, k)
	delete(r.present, k)
}

func plusFields(a, b [8]uint64) [8]uint64 {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// minusFields is a less b, field by field, 0 where b is larger.
func minusFields(a, b [8]uint64) [8]uint64 {
	var out [8]uint64
	for i := range a {
		if a[i] > b[i] {
			out[i] = a[i] - b[i]
		}
	}
	return out
}
