package stormapi

import (
	"fmt"
	"net/http"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/internal/hostcheck"
)

// The Host check against DNS rebinding (package hostcheck): the API
// answers only requests whose Host names this nimbus: an IP address,
// localhost, or one of the names it is configured or certified as
// (Config.HostNames).

// checkHost is the refusal of a request whose Host names something else
// than this nimbus, nil for one that names it.
func (a *API) checkHost(r *http.Request) error {
	var names []string
	if a.cfg.HostNames != nil {
		names = a.cfg.HostNames()
	}
	if hostcheck.Allowed(r.Host, names) {
		return nil
	}
	return fmt.Errorf("%w: Host %s is not a name of this nimbus (a page rebinding its own name to this address?); "+
		"use its address, localhost, nimbus.host or a name in its certificate", apierr.ErrPermissionDenied, quoted(r.Host))
}
