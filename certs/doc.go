// Package certs owns a process's TLS material: its certificate (chain
// allowed) and key, and the CA bundle (truststore) that verifies its peers,
// loaded from PEM files and re-read when they change, so that rotating a
// certificate needs no restart. It also makes a throwaway CA and
// certificates for the quickstart and for tests.
//
// # Loading and reloading
//
// Load reads the three files (nimbus.grpc.tls.cert.path, .key.path and
// .truststore.path) and refuses, naming the file and the problem, material
// that cannot work: a file missing or not PEM, a key that does not match its
// certificate, a certificate expired or not yet valid, a CA bundle without
// certificates. The Reloader it returns starts nothing: the tls.Config
// callbacks it hands out look at the files' size, modification time and
// identity on use, at most once per DefaultCheckInterval, and re-read them
// when they changed. A reload that fails keeps the last good material and is
// logged once per change; a reload that works is logged with the new
// certificate's subject and expiry. A rotation that writes the certificate
// and then the key is seen as a broken pair in between, and the old pair
// stays in use until the new one is whole.
//
// # Verification
//
// Both ends verify against the truststore as it is at the handshake, and a
// refusal reads as what to fix ("the certificate of nimbus-2 expired on
// ...", "the server's certificate (CN=..., issued by ...) is not signed by a
// CA in /etc/nimbus/ca.pem"), wrapping a sentinel (ErrUntrusted,
// ErrExpired, ...) for errors.Is.
//
// A client verifies the server itself, with crypto/x509: a tls.Config has no
// callback that could give crypto/tls a truststore read after the dial
// began. A server lets crypto/tls verify client certificates, with the
// truststore of the moment as ClientCAs, so that a connection's
// VerifiedChains hold the client's certificate, which is what package auth
// takes a principal from; ServerCredentials then explains crypto/tls's
// refusals, checking the refused certificates again, and logs them with the
// client's address.
//
// # The throwaway CA
//
// NewCA, LoadCA and (*CA).Issue write ECDSA P-256 keys (mode 0600) and
// certificates for servers (serverAuth, with DNS and IP SANs), clients
// (clientAuth, the common name being the principal) or both. They never
// overwrite a file. `stormctl tls ca create` and `stormctl tls cert create`
// are their command line.
package certs
