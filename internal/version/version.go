// Package version is the build's version, reported by every daemon and by
// stormctl (--version, stormctl version) and in each nimbus's and
// supervisor's summary.
package version

import (
	"runtime"
	"runtime/debug"
)

// devVersion is Version when the build did not set it.
const devVersion = "0.1.0-dev"

// Version is set at build time with
// -ldflags "-X github.com/nimbusha/nimbus/internal/version.Version=..."
// (the Makefile sets git describe).
var Version = devVersion

// String is the line a program's --version prints: its name, Version,
// and the Go release and platform it was built for, e.g.
// "nimbus v0.3.0-4-gab12cd3 (go1.26.0 linux/amd64)". A build that did not
// set Version (go build, go test) names its commit instead, when the go
// command recorded one, so that a development binary can still be traced.
func String(program string) string {
	s := program + " " + Version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if Version == devVersion {
		if rev := revision(); rev != "" {
			s += ", commit " + rev
		}
	}
	return s + ")"
}

// revision is the VCS commit the go command stamped into the binary,
// shortened, with "+dirty" if the tree had changes; "" if none.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(len(rev), 12)] + dirty
}
