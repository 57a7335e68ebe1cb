package stormapi

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/nimbusha/nimbus/apierr"
)

// The Host check against DNS rebinding: a hostile page whose name its DNS
// server rebinds to this nimbus's address (127.0.0.1 for a UI on
// loopback) is, to the browser, of its own origin, so the cross-origin
// check lets its POSTs through and it reads the answers. What gives it
// away is the Host header, which still carries the page's name. The API
// answers only requests that name the nimbus: an IP address (a rebinding
// page cannot make a browser send one), localhost, or one of the names
// the nimbus is configured or certified as (Config.HostNames).

// hostAllowed reports whether the Host of a request, host[:port], names
// this nimbus.
func hostAllowed(hostport string, names []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true // no Host: not a browser's request
	}
	for _, n := range names {
		if strings.EqualFold(strings.TrimSuffix(n, "."), host) {
			return true
		}
	}
	return false
}

// checkHost is the refusal of a request whose Host names something else
// than this nimbus, nil for one that names it.
func (a *API) checkHost(r *http.Request) error {
	var names []string
	if a.cfg.HostNames != nil {
		names = a.cfg.HostNames()
	}
	if hostAllowed(r.Host, names) {
		return nil
	}
	return fmt.Errorf("%w: Host %s is not a name of this nimbus (a page rebinding its own name to this address?); "+
		"use its address, localhost, nimbus.host or a name in its certificate", apierr.ErrPermissionDenied, quoted(r.Host))
}
