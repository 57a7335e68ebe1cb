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

// run is what was counted of one worker run, by component and row.
type run struct {
	counted map[string]map[rowName]Counts // what was counted of each key (kept while it is missing)
	present map[string]map[rowName]bool   // the rows of each component's last report
	pooled  map[string]bool
	// evicted is, per pooled component, what was counted of its keys
	// whose series were evicted or swept: part of what was counted of it.
	evicted map[string]Counts
}

// rowName is a key within its component: its source and stream.
type rowName struct{ source, stream string }

func rowOf(k Key) rowName { return rowName{k.Source, k.Stream} }

func compareRow(a, b rowName) int {
	return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.source, b.source))
}

func newRun() run {
	return run{counted: map[string]map[rowName]Counts{}, present: map[string]map[rowName]bool{},
		pooled: map[string]bool{}, evicted: map[string]Counts{}}
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
		counted := r.counted[c]
		if counted == nil {
			counted = map[rowName]Counts{}
			r.counted[c] = counted
		}
		if r.pooled[c] {
			r.accountPooled(c, rows, idx, d)
		} else {
			for _, i := range idx {
				d[i] = increase(rows[i].Counts, counted[rowOf(rows[i].Key)])
				counted[rowOf(rows[i].Key)] = rows[i].Counts // a counter that went down is the new base
			}
		}
		present := make(map[rowName]bool, len(idx))
		for _, i := range idx {
			present[rowOf(rows[i].Key)] = true
		}
		r.present[c] = present
	}
	return d
}

// accountPooled accounts component c's rows (rows[idx]) as a whole: the
// increase is what its rows hold now beyond all that was counted of it,
// given to each row up to its own rise, rows of its previous report first.
func (r *run) accountPooled(c string, rows []StreamCounts, idx []int, d []Counts) {
	counted := r.counted[c]
	var total, was [8]uint64
	for _, i := range idx {
		total = plusFields(total, rows[i].fields())
	}
	for _, n := range counted {
		was = plusFields(was, n.fields())
	}
	was = plusFields(was, r.evicted[c].fields())
	avail := minusFields(total, was)
	present := r.present[c]
	slices.SortFunc(idx, func(x, y int) int {
		px, py := present[rowOf(rows[x].Key)], present[rowOf(rows[y].Key)]
		if px != py {
			if px {
				return -1
			}
			return 1
		}
		return compareRow(rowOf(rows[x].Key), rowOf(rows[y].Key))
	})
	for _, i := range idx {
		before := counted[rowOf(rows[i].Key)].fields()
		want := minusFields(rows[i].fields(), before)
		var got [8]uint64
		for f := range got {
			got[f] = min(want[f], avail[f])
			avail[f] -= got[f]
		}
		d[i] = countsOf(got)
		counted[rowOf(rows[i].Key)] = countsOf(plusFields(before, got))
	}
}

// forget drops key k's counted value. Of a pooled component, whose rows
// may hold k's counts under another key, it stays in the component's, so
// they are not counted again; of another, k was simply not reported for a
// while, and if it comes back it counts from zero.
func (r *run) forget(k Key) {
	if r.pooled[k.Component] {
		r.evicted[k.Component] = r.evicted[k.Component].Add(r.counted[k.Component][rowOf(k)])
	}
	delete(r.counted[k.Component], rowOf(k))
	delete(r.present[k.Component], rowOf(k))
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
