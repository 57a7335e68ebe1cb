// Package daemon holds what every daemon shares:
//
//   - what its main does before it starts (Run, Setup: flags,
//     configuration with flags > env > file > defaults, checked against
//     the registered code distributors, the logger; --help, --version, and
//     errors told so that the operator can act on them) and the ZooKeeper
//     session's configuration (SessionConfig);
//   - its skeleton once started (Lifecycle: goroutines, stops in reverse,
//     the ready line and readiness, told to systemd with Notify, the fatal
//     error; Register: its registration in ZooKeeper);
//   - what its metrics port serves (MetricsHandler, ServeMetrics).
package daemon
