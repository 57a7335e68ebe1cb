// Package webui is the nimbus's web UI: a single page, hand-written HTML,
// CSS and vanilla JavaScript (no framework, no build step, nothing from a
// CDN), embedded in the binary from static/ and served by Handler.
//
// The package owns the page and its assets, the HTTP headers they are
// served with (Content-Security-Policy, nosniff, no referrer, no-cache
// with ETags) and nothing else: the page reads the Storm-compatible REST
// API under /api/v1 of the same origin (package stormapi) and sends its
// actions there, so every rule about who may see or do what lives in the
// API, never here. The nimbus mounts Handler beside that API.
//
// The page is hash-routed: #/ is the cluster (nimbuses, supervisors,
// topologies, a banner while there is no leader), #/topology/<id> a
// topology (workers, components, executors, configuration, and the
// activate, deactivate, rebalance and kill actions, each confirmed in a
// dialog first), #/supervisor/<id> a supervisor and its workers. It
// refreshes every 5 s and shows how fresh its data is. It builds the DOM
// with textContent only, so no value from the API is ever parsed as HTML;
// the Content-Security-Policy forbids inline scripts and styles besides.
// The element ids the browser test relies on (integration/
// webui_browser_test.go) are listed at the top of static/app.js.
package webui
