// Package configs owns Nimbus-HA's configuration: the Storm key names, their
// defaults, how they are loaded, what makes them valid, and how a problem
// with one is told to the operator.
//
// A value comes from, in increasing precedence: the built-in defaults, a YAML
// file given with --config (Storm's flat dotted keys, see storm.yaml), the
// environment (STORM_ZOOKEEPER_PORT, STORM_NIMBUS_HOST, see EnvName), and
// command-line flags named exactly like the keys (--nimbus.grpc.port).
// Durations accept an integer in the unit the key names (ms or secs) or a Go
// duration such as "5s"; lists from the environment or flags are
// comma-separated.
//
// viper (github.com/spf13/viper, its key delimiter "::" since the keys hold
// dots) merges the layers. Load remembers beside it where each value came
// from (Source), which viper cannot say, and every problem
// it reports is a KeyError that says so: the file, line and key, the
// variable, or the flag (source.go). A key in the file or a STORM_*
// variable that names nothing but is close to a known name (Closest,
// suggest.go) is a typo, and an error saying which key it must be; other
// unknown keys in the file are warnings, since Storm files carry many
// more (file.go).
//
// Load always returns a Config that passed Validate, so daemons can use it
// without further checks. Nothing here starts goroutines or holds globals.
package configs
