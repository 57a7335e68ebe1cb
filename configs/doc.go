// Package configs owns Nimbus-HA's configuration: the Storm key names, their
// defaults, how they are loaded, and what makes them valid.
//
// A value comes from, in increasing precedence: the built-in defaults, a YAML
// file given with --config (Storm's flat dotted keys, see storm.yaml), the
// environment (STORM_ZOOKEEPER_PORT, STORM_NIMBUS_HOST, see EnvName), and
// command-line flags named exactly like the keys (--nimbus.grpc.port).
// Durations accept an integer in the unit the key names (ms or secs) or a Go
// duration such as "5s"; lists from the environment or flags are
// comma-separated.
//
// Load always returns a Config that passed Validate, so daemons can use it
// without further checks. Nothing here starts goroutines or holds globals.
package configs
