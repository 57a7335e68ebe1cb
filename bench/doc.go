// Package bench holds the benchmarks behind the numbers in RESULTS.md.
// They run real processes against a real ZooKeeper, so they are Go
// benchmarks (run with `make bench`), never timed assertions in tests.
package bench
