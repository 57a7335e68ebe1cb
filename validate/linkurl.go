package validate

import (
	"net/url"
)

// maxLinkURLLen bounds a base URL read from the cluster.
const maxLinkURLLen = 2048

// LinkURL checks raw, a server's base URL that another daemon registered
// (a supervisor's logviewer_url), before anything links to it or sends a
// request there: an absolute http or https URL with a host, and nothing a
// base must not carry (user info, query, fragment). Anything else, a
// javascript: or data: URL among them, is an *Error naming field; the
// URL returned is the parsed one.
func LinkURL(field, raw string) (*url.URL, error) {
	if len(raw) > maxLinkURLLen {
		return nil, Invalid(field, "%d bytes, at most %d", len(raw), maxLinkURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Invalid(field, "%s is not a URL", showValue(raw))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, Invalid(field, "%s: want an http or https URL", showValue(raw))
	case u.Host == "" || u.Hostname() == "":
		return nil, Invalid(field, "%s has no host", showValue(raw))
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, Invalid(field, "%s: want only scheme, host, port and path", showValue(raw))
	}
	return u, nil
}
