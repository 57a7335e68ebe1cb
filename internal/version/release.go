package version

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Release is the release line (major.minor) of this build: what the
// compatibility rules of docs/ARCHITECTURE.md section 18 speak of. Every
// daemon registers it. It moves on when a release adds a behaviour that
// needs every daemon upgraded (a Feature), and a cluster may mix Release
// and the one before it.
const Release = "0.2"

// Oldest is the release of a daemon that registers none: every build
// before the field existed.
const Oldest = "0.1"

// A Feature is a behaviour that needs every nimbus and supervisor at or
// past its release: until the cluster version reaches it, daemons keep the
// behaviour before it.
type Feature struct {
	Name    string
	Release string
}

// KeepWorkersOnStop: a supervisor that is stopped leaves its workers to
// their keepers for the next supervisor to adopt. A supervisor of release
// 0.1 adopts nothing and would start a second worker beside each kept one,
// so with any daemon at 0.1 (say during a roll back) a stopping supervisor
// stops its workers as 0.1 did.
var KeepWorkersOnStop = Feature{Name: "keep workers when a supervisor stops", Release: "0.2"}

// Enabled reports whether f is on at cluster version cluster; an
// unparsable cluster version enables nothing.
func (f Feature) Enabled(cluster string) bool {
	c, err := CompareReleases(cluster, f.Release)
	return err == nil && c >= 0
}

// ReleaseOf is the release a registration names: r, or Oldest when it is
// empty.
func ReleaseOf(r string) string {
	if r == "" {
		return Oldest
	}
	return r
}

// CompareReleases compares two releases (major.minor) as numbers: -1, 0
// or 1.
func CompareReleases(a, b string) (int, error) {
	am, an, err := parseRelease(a)
	if err != nil {
		return 0, err
	}
	bm, bn, err := parseRelease(b)
	if err != nil {
		return 0, err
	}
	return cmp.Or(cmp.Compare(am, bm), cmp.Compare(an, bn)), nil
}

// Lowest returns the lowest of releases (each ReleaseOf'd), and "" for
// none. An unparsable release counts as Oldest: a daemon that says
// something this build cannot read may be older than any it knows.
func Lowest(releases ...string) string {
	lowest := ""
	for _, r := range releases {
		r = ReleaseOf(r)
		if _, _, err := parseRelease(r); err != nil {
			r = Oldest
		}
		if lowest == "" {
			lowest = r
		} else if c, _ := CompareReleases(r, lowest); c < 0 {
			lowest = r
		}
	}
	return lowest
}

func parseRelease(r string) (major, minor int, err error) {
	ma, mi, ok := strings.Cut(r, ".")
	major, err1 := strconv.Atoi(ma)
	minor, err2 := strconv.Atoi(mi)
	if !ok || err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("version: release %q: want MAJOR.MINOR", r)
	}
	return major, minor, nil
}
