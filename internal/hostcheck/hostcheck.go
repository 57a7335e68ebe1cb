package hostcheck

import (
	"net"
	"strings"
)

// Allowed reports whether hostport, a request's Host (host[:port]), names
// the server whose names besides IP addresses and localhost are names;
// case and a trailing dot do not matter.
func Allowed(hostport string, names []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, n := range names {
		if n != "" && strings.EqualFold(strings.TrimSuffix(n, "."), host) {
			return true
		}
	}
	return false
}
