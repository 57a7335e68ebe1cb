package client

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"
)

// HandshakeError is a connection's TLS handshake failing: a certificate
// refused by either side, a protocol mismatch. Trying again will not
// help until the configuration changes, so calls that meet it are not
// retried; Err says why, in the words of the credentials (package certs
// words them for an operator).
type HandshakeError struct{ Err error }

func (e *HandshakeError) Error() string { return "TLS handshake: " + e.Err.Error() }
func (e *HandshakeError) Unwrap() error { return e.Err }

// recordingCredentials are a connection's transport credentials that
// remember why its last handshake failed, as the dialer remembers why a
// dial did, so errors can say it and calls can stop retrying.
type recordingCredentials struct {
	credentials.TransportCredentials
	cn *conn
}

func (r *recordingCredentials) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := r.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		err = explainHandshake(err)
		r.cn.setDialErr(&HandshakeError{Err: err})
	} else {
		r.cn.setDialErr(nil)
	}
	return c, info, err
}

func (r *recordingCredentials) Clone() credentials.TransportCredentials {
	return &recordingCredentials{TransportCredentials: r.TransportCredentials.Clone(), cn: r.cn}
}

// handshakeFailed reports whether err is a call that failed because every
// address it tried refused the TLS handshake or was no gRPC port as this
// client speaks to it (PortMismatchError).
func handshakeFailed(err error) bool {
	var seeds *NoSeedAnsweredError
	if !errors.As(err, &seeds) || len(seeds.Failures) == 0 {
		return false
	}
	var hs *HandshakeError
	for _, f := range seeds.Failures {
		if !errors.As(f.Dial, &hs) && !mismatched(f) {
			return false
		}
	}
	return true
}
