package stormapi

import (
	"context"
	"net/http"

	"github.com/nimbusha/nimbus/auth"
)

// The audit of REST requests. Every request that is not a read (GET,
// HEAD, OPTIONS) leaves one audit line on the nimbus that answered it,
// whatever its outcome: refused for its Host, cross-origin, unknown path,
// wrong method, bad input, no certificate, actions disabled, unknown
// topology, no leader, or refused or taken by the leader. An action that
// reached the leader is audited there too, by the gRPC interceptors, as
// the caller, via this nimbus, with the caller's address (auth.Forward).
// Reads are not audited: they change nothing, and probes and the web UI's
// polling would fill the log.

// audited is what one mutating request's audit line needs that only the
// route's handler learns: its target, and the error it was answered with.
type audited struct {
	target string
	err    error
}

type auditedKey struct{}

// isRead reports whether method only reads.
func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// audit serves r with next and then writes its audit line, if r is not a
// read.
func (a *API) audit(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request)) {
	if isRead(r.Method) {
		next(w, r)
		return
	}
	rec := &audited{}
	r = r.WithContext(context.WithValue(r.Context(), auditedKey{}, rec))
	next(w, r)
	a.cfg.Authz.AuditHTTP(r, a.actionOf(r), rec.target, rec.err)
}

// actionOf is the action of the POST route r matches, "" if none.
func (a *API) actionOf(r *http.Request) auth.Action {
	_, pattern := a.mux.Handler(r)
	return a.actions[pattern]
}

// auditedOf is r's audit record, nil for a read.
func auditedOf(r *http.Request) *audited {
	rec, _ := r.Context().Value(auditedKey{}).(*audited)
	return rec
}

// noteTarget records what r's route names, for its audit line.
func noteTarget(r *http.Request, target string) {
	if rec := auditedOf(r); rec != nil {
		rec.target = target
	}
}

// noteRefusal records the error r was answered with, for its audit line.
func noteRefusal(r *http.Request, err error) {
	if rec := auditedOf(r); rec != nil {
		rec.err = err
	}
}
