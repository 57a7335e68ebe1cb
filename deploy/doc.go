// Package deploy holds how Nimbus-HA is installed (README.md lists the
// files): the .deb and .rpm packages (nfpm.yaml, scripts/, built by make
// package), their systemd units (systemd/), the container image and the
// Kubernetes manifests. It has only tests, each building or rendering one
// of those and checking what an operator would get.
package deploy
