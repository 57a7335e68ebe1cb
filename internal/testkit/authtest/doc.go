// Package authtest makes what tests of authenticated gRPC need, with
// crypto/x509 and nothing else: a throwaway CA, server and client
// certificates for chosen principals, and a gRPC server on loopback with
// real TLS. For tests only; the daemons' TLS material is package certs'.
package authtest
