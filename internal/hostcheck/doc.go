// Package hostcheck decides whether an HTTP request's Host names the
// server it reached: the check against DNS rebinding that the REST API
// (package stormapi) and the logviewer (package logviewer) share.
//
// A hostile page whose name its DNS server rebinds to a server's address
// (127.0.0.1 for a server on loopback) is, to the browser, of its own
// origin: it may send requests and read the answers. What gives it away
// is the Host header, which still carries the page's name. A server
// answers only requests that name it: an IP address (a rebinding page
// cannot make a browser send one), localhost, or one of the names it is
// configured or certified as. A request without a Host is no browser's.
package hostcheck
