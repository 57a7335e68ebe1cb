// Package codeservice serves a node's verified code store to other nodes:
// the CodeService of proto/nimbus/v1 (GetCodeMeta, DownloadCode), which
// codedistributor's Fetcher asks for the meta of a topology's bundle with
// every backend, and localfs downloads its files from. Every nimbus serves
// it.
//
// It hashes what it sends: a copy found not to match its meta is reported to
// the store (Store.ReportCorrupt), whose owner re-verifies and fetches it
// again, while the downloader, which verifies too, moves on to another
// replica.
//
// With an authorizer (WithAuthorizer) and authentication on, it answers
// only nimbus.supervisor.users, nimbus.daemon.users, nimbus.admins, and the
// topology's owner and topology.users as the spec stored with the code says
// (ReadSpec, checked against the meta): the code and its conf are the
// owner's, and nobody else's to read. The check comes before the first
// byte.
package codeservice
