package configs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// UnknownFlag returns the flag name err, a pflag parse error, says is
// unknown, as typed ("-seeds", a long name with one dash, counts as
// "seeds"); ok is false for any other error.
func UnknownFlag(err error) (typed string, ok bool) {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) {
		return "", false
	}
	typed = unknown.GetSpecifiedName()
	if group := unknown.GetSpecifiedShortnames(); group != "" {
		typed = group
	}
	return typed, true
}

// SuggestFlag adds to err, when it is about an unknown flag, the flag of
// fs it is close to (--seed: did you mean --seeds?); it returns err
// unchanged otherwise.
func SuggestFlag(fs *pflag.FlagSet, err error) error {
	typed, ok := UnknownFlag(err)
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := Closest(typed, names); s != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return err
}

// Closest returns the candidate that name is most likely a misspelling of
// (or name's own candidate, in any case), or "" when none is close enough
// to be a typo: at most 1 + len(name)/16
// edits (letters inserted, deleted, replaced, or two neighbours swapped),
// ignoring case. The bound grows with length because a long dotted key has
// room for two slips, while a short name one edit away from another is
// usually a different word (storm.log.dir is not storm.local.dir). Ties go
// to the earlier candidate.
func Closest(name string, candidates []string) string {
	limit := 1 + len(name)/16
	best, bestDist := "", limit+1
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if d := editDistance(lower, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// the fewest single-byte insertions, deletions, substitutions and swaps of
// adjacent bytes that turn a into b (no substring edited twice). A swap
// counts once because "prot" for "port" is one slip of the fingers.
func editDistance(a, b string) int {
	// Three rows of the dynamic programme: two back, one back, current.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
