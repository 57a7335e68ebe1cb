package worker

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Executor is one executor: a range of tasks of one component, as in Storm.
type Executor struct {
	Component string
	Start     int // first task id, >= 1
	End       int // last task id, >= Start
}

func (e Executor) String() string { return fmt.Sprintf("%s[%d-%d]", e.Component, e.Start, e.End) }

// Executors is the list a worker runs, in the order STORM_EXECUTORS gives it.
type Executors []Executor

// String formats the list the way ParseExecutors reads it.
func (es Executors) String() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ",")
}

// Of returns how many of the executors run component.
func (es Executors) Of(component string) int {
	n := 0
	for _, e := range es {
		if e.Component == component {
			n++
		}
	}
	return n
}

// ParseExecutors parses STORM_EXECUTORS, "component[start-end],...", for
// example "sentence[1-1],split[2-3],count[4-6]". Spaces around entries are
// ignored. Task ids are at least 1, start <= end, and no task appears twice.
// A component may have several executors. Errors name the entry at fault.
func ParseExecutors(s string) (Executors, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty list: want component[start-end],...")
	}
	var es Executors
	for i, raw := range strings.Split(s, ",") {
		e, err := parseExecutor(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("entry %d %q: %w", i+1, raw, err)
		}
		es = append(es, e)
	}
	byStart := slices.Clone(es)
	slices.SortFunc(byStart, func(a, b Executor) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(byStart); i++ {
		if prev, e := byStart[i-1], byStart[i]; e.Start <= prev.End {
			return nil, fmt.Errorf("%s and %s share tasks", prev, e)
		}
	}
	return es, nil
}

func parseExecutor(s string) (Executor, error) {
	name, rest, ok := strings.Cut(s, "[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return Executor{}, errors.New("want component[start-end]")
	}
	if name == "" {
		return Executor{}, errors.New("empty component name")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return isSpaceOrControl(r) || strings.ContainsRune("[],", r) }) {
		return Executor{}, fmt.Errorf("component name %q has a space, control character or one of [],", name)
	}
	lo, hi, ok := strings.Cut(strings.TrimSuffix(rest, "]"), "-")
	if !ok {
		return Executor{}, errors.New("want a task range start-end inside the brackets")
	}
	start, err := parseTask(lo)
	if err != nil {
		return Executor{}, fmt.Errorf("start: %w", err)
	}
	end, err := parseTask(hi)
	if err != nil {
		return Executor{}, fmt.Errorf("end: %w", err)
	}
	if end < start {
		return Executor{}, fmt.Errorf("end %d is before start %d", end, start)
	}
	return Executor{Component: name, Start: start, End: end}, nil
}

// parseTask parses a task id: decimal digits only, 1 to MaxInt32.
func parseTask(s string) (int, error) {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, fmt.Errorf("task id %q is not a positive integer", s)
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("task id %q must be between 1 and %d", s, math.MaxInt32)
	}
	return int(n), nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
