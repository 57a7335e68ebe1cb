// Package stormapi serves Storm's UI REST API (/api/v1, Storm's field
// names and JSON types, docs/design/storm-ui-rest-api.md) from a nimbus's
// own caches, so every nimbus answers it, leader or not, and the tools that
// read Storm's UI (Datadog's storm check, Prometheus Storm exporters) read
// Nimbus-HA unchanged.
//
// Reads call the nimbus's NimbusService handlers in process (Reader): one
// cached view, two encodings. The JSON of the summaries is encoded once per
// cluster summary the view builds (snapshot) and shared by every request
// until the next. Actions are forwarded to the leader through the Go SDK
// (Actor) as the caller (auth.Forward); with no leader they answer 503 and
// say why. GET blobstore, which Storm's UI lacks, lists the blobs the
// caller may read (blobs.go).
//
// Every answer carries Nimbus-HA's extras beside Storm's fields:
// leaderlessSeconds, cacheAgeMs and leadershipBlockedBy (State,
// blockedBy). Authentication and authorization are package auth's, by the
// rule of the RPC each route stands for; errors map to HTTP codes in one
// place, apistatus.HTTPStatus, and have Storm's shape {"error","errorMessage"}.
// Every request that is not a read leaves one audit line on the nimbus that
// answered it, refused or not (audit.go, auth.Authorizer.AuditHTTP).
package stormapi
