// Package version is the build's version, reported by every daemon.
package version

// Version is set at build time with
// -ldflags "-X github.com/nimbusha/nimbus/internal/version.Version=...".
var Version = "0.1.0-dev"
