package codeservice

import (
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/codedistributor"
)

// Option configures the CodeService.
type Option func(*server)

// WithAuthorizer has every GetCodeMeta and DownloadCode checked by a: with
// authentication on, only nimbus.supervisor.users, nimbus.daemon.users,
// nimbus.admins and the topology's owner and topology.users, read from the
// spec stored with its code (ReadSpec), get an answer; anyone else gets
// PermissionDenied before a byte is sent. Without it the service checks
// nothing, and a's interceptors, if installed, refuse its answers (they
// were not authorized): authentication on needs this option.
func WithAuthorizer(a *auth.Authorizer) Option {
	return func(s *server) { s.auth = a }
}

// WithBlobs serves blob bundles (requests with blob set) from store: to
// nimbus.daemon.users, nimbus.supervisor.users and nimbus.admins only.
func WithBlobs(store *codedistributor.Store) Option {
	return func(s *server) { s.blobs = store }
}

// WithAction has the authorizer check act instead of auth.ActionFetchCode:
// a supervisor serves its store with auth.ActionRecoverCode, which only
// nimbuses and admins may take.
func WithAction(act auth.Action) Option {
	return func(s *server) { s.action = act }
}
