package client

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
)

// What an address that is not a nimbus's gRPC port, or that speaks TLS
// when the client does not (or the reverse), looks like from the client,
// in the words of the keys that fix it. gRPC's own messages ("error
// reading server preface: EOF", "missing selected ALPN property") say
// nothing a new user can act on.
var (
	// ErrServerWantsTLS: the server closed the connection without a word,
	// which a TLS port does to a plaintext client.
	ErrServerWantsTLS = errors.New("the server closed the connection without answering, as a TLS port does to a plaintext client: " +
		"turn TLS on in this client (nimbus.grpc.tls.enable: true and nimbus.grpc.tls.truststore.path; in the SDK, WithTransportCredentials), " +
		"or check that nimbus.seeds names a nimbus's nimbus.grpc.port")
	// ErrServerPlaintext: this client speaks TLS and the server answered in
	// plaintext: TLS is on one side only.
	ErrServerPlaintext = errors.New("the server does not speak TLS: nimbus.grpc.tls.enable is on in this client and off on the server; " +
		"set it the same on both (a server with TLS also needs nimbus.grpc.tls.cert.path and .key.path)")
	// ErrNotGRPCPort: an HTTP server answered (a metrics or UI port), not a
	// nimbus's gRPC port.
	ErrNotGRPCPort = errors.New("not a nimbus gRPC port (an HTTP server answered): is it the metrics or UI port? " +
		"nimbus.seeds must name nimbus.grpc.port (default 6627)")
)

// PortMismatchError is a connection that reached a server which cannot be
// a nimbus's gRPC port as this client speaks to it. Reason is one of
// ErrServerWantsTLS, ErrServerPlaintext and ErrNotGRPCPort; Err is what
// gRPC or crypto/tls said. errors.Is and errors.As see both. Like a
// refused handshake, it ends a call at once: trying again will not help
// until the configuration changes.
type PortMismatchError struct {
	Reason error
	Err    error
}

func (e *PortMismatchError) Error() string {
	return e.Reason.Error() + " [" + e.Err.Error() + "]"
}

// Unwrap returns the reason and the original error.
func (e *PortMismatchError) Unwrap() []error { return []error{e.Reason, e.Err} }

// httpAnswer is how every HTTP/1 server's answer begins.
var httpAnswer = []byte("HTTP/")

// explainHandshake returns err, a failed client TLS handshake, as a
// *PortMismatchError when it shows the server is no TLS gRPC port: it
// answered in plaintext (crypto/tls's RecordHeaderError holds its first
// bytes: an HTTP/1 status line, or a plaintext gRPC server's frames), or
// it is an HTTPS server that does not offer HTTP/2 (no ALPN). Other errors
// (a refused certificate) are returned as they are.
func explainHandshake(err error) error {
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) {
		if bytes.HasPrefix(rec.RecordHeader[:], httpAnswer) {
			return &PortMismatchError{Reason: ErrNotGRPCPort, Err: err}
		}
		return &PortMismatchError{Reason: ErrServerPlaintext, Err: err}
	}
	// grpc-go exports no error for a server without ALPN (every HTTPS
	// server but a gRPC one, such as the UI and metrics ports); its
	// message is the only mark. TestPortMismatch keeps this true.
	if strings.Contains(err.Error(), "missing selected ALPN property") {
		return &PortMismatchError{Reason: ErrNotGRPCPort, Err: err}
	}
	return err
}

// firstWords is a dialed connection that looks at the server's first
// bytes, for a plaintext client: an HTTP/1 status line is not a gRPC port,
// and a close (or reset) before any byte is a TLS port waiting for a ClientHello it
// did not get (a gRPC server speaks first, with its settings). What it
// finds becomes the connection's dial error, which gRPC's own ("error
// reading server preface") does not explain. Over TLS the handshake reads
// these bytes first, and its own error (recordingCredentials) replaces
// this one.
type firstWords struct {
	net.Conn
	cn *conn

	mu     sync.Mutex
	head   []byte
	judged bool
}

func (w *firstWords) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.judged {
		return n, err
	}
	w.head = append(w.head, p[:min(n, len(httpAnswer)-len(w.head))]...)
	switch {
	case len(w.head) == len(httpAnswer):
		w.judged = true
		if bytes.Equal(w.head, httpAnswer) {
			w.cn.setDialErr(&PortMismatchError{Reason: ErrNotGRPCPort, Err: errors.New("the server answered " + string(w.head) + "...")})
		}
	case err != nil:
		w.judged = true
		// A TLS server that reads the HTTP/2 preface as a bad record
		// closes with it unread, which may reset the connection.
		if len(w.head) == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			w.cn.setDialErr(&PortMismatchError{Reason: ErrServerWantsTLS, Err: err})
		}
	}
	return n, err
}

// mismatched reports whether failure f met a server that is no gRPC port
// as this client speaks to it.
func mismatched(f SeedFailure) bool {
	var pm *PortMismatchError
	return errors.As(f.Dial, &pm)
}
