// Package k8s holds the tests of Nimbus-HA's deployment artifacts: the
// Kubernetes manifests beside it (base/, a kustomization, and example/, an
// overlay), rendered and decoded strictly with the API types, and the
// image that ../Containerfile builds. A module of its own, so that the
// Kubernetes API types weigh only on these tests, not on the daemons.
package k8s
