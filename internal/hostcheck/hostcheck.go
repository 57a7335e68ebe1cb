package hostcheck

import (
	"crypto/x509"
	"net"
	"os"
	"strings"
)

// Allowed reports whether hostport, a request's Host (host[:port]), names
// the server whose names besides IP addresses and localhost are names;
// case and a trailing dot do not matter, and a wildcard name covers one
// label.
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
		if matches(strings.ToLower(strings.TrimSuffix(n, ".")), host) {
			return true
		}
	}
	return false
}

// matches reports whether a name (lower case) covers host: itself, or,
// for a certificate's wildcard "*.example.com", exactly one label in its
// place, as TLS verification reads it ("a.example.com", not
// "a.b.example.com" nor "example.com").
func matches(name, host string) bool {
	if name == "" {
		return false
	}
	if suffix, ok := strings.CutPrefix(name, "*."); ok {
		label, rest, found := strings.Cut(host, ".")
		return found && label != "" && rest == suffix
	}
	return name == host
}

// Names are the names a server answers to besides IP addresses and
// localhost: those it is configured as, its machine's name, and the DNS
// names of its certificate (leaf, nil without TLS).
func Names(leaf *x509.Certificate, configured ...string) []string {
	names := append([]string(nil), configured...)
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	if leaf != nil {
		names = append(names, leaf.DNSNames...)
	}
	return names
}
