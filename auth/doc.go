// Package auth decides who a gRPC caller is and what it may do, so that a
// rule lives in one place and one table of tests: the gRPC interceptors, the
// handlers' topology checks, the CodeService and the REST API (package
// stormapi) all ask it.
//
// Who: a caller's principal comes from its verified client certificate
// (the leaf of the first chain the TLS handshake verified), read by
// nimbus.grpc.tls.principal (cn, san.email, san.dns or san.uri); never from
// a field the client fills in. With authentication off
// (configs.Config.SecureGRPC false) every call is allowed and the
// principal is empty.
//
// What: Decide is the rule, one pure function over a table of actions and
// the roles that may take them, with Storm's SimpleACLAuthorizer semantics:
// nimbus.admins may do everything; nimbus.users (empty: any authenticated
// principal) may submit; a topology's owner and its topology.users may kill,
// activate, deactivate and rebalance it and read its conf and code;
// nimbus.supervisor.users and nimbus.daemon.users may fetch any topology's
// code; any authenticated principal may read the cluster. A refusal wraps
// apierr.ErrPermissionDenied and names the principal, the action and the
// topology; a call with no verified certificate wraps
// apierr.ErrUnauthenticated.
//
// Where: the interceptors (Authorizer.UnaryServerInterceptor,
// StreamServerInterceptor) authenticate every call, put the principal in
// the context (FromContext), apply the rules that need no topology (submit,
// cluster reads), refuse methods they do not know, and write the audit line
// of every mutating call; the REST API writes its own with AuditHTTP, and
// passes its caller's principal and address on with Forward and WithClient. Rules that need the topology's owner and
// topology.users are asked by the handler that knows them, with one call:
// Authorizer.Topology. The interceptors check that it did: a topology-scoped
// call that reaches its answer unchecked is logged as an error, and a read
// (a code download) is refused before it sends a byte.
package auth
