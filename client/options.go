package client

import (
	"crypto/tls"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Defaults of the options.
const (
	DefaultDialTimeout  = 5 * time.Second
	DefaultCallTimeout  = 5 * time.Second
	DefaultRetryTimeout = 30 * time.Second
	// DefaultMaxRedirects bounds the NOT_LEADER redirects one call follows,
	// so two nimbuses that name each other cannot loop a call forever.
	DefaultMaxRedirects = 5
)

// Backoff between retries of leader-only calls: full jitter over a window
// that doubles from backoffBase up to backoffMax.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = 2 * time.Second
)

// Option configures a Client.
type Option func(*options)

type options struct {
	dialTimeout  time.Duration
	callTimeout  time.Duration
	maxAttempts  int
	retryTimeout time.Duration
	maxRedirects int
	logger       *slog.Logger
	creds        credentials.TransportCredentials // nil: plaintext
	dialOptions  []grpc.DialOption
}

func defaultOptions() options {
	return options{
		dialTimeout:  DefaultDialTimeout,
		callTimeout:  DefaultCallTimeout,
		retryTimeout: DefaultRetryTimeout,
		maxRedirects: DefaultMaxRedirects,
		logger:       slog.New(slog.DiscardHandler),
	}
}

// WithDialTimeout bounds each attempt to connect to one nimbus (default
// DefaultDialTimeout), so an unreachable host costs that much at most.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) { o.dialTimeout = d }
}

// WithCallTimeout bounds each attempt of a unary call at one nimbus
// (default DefaultCallTimeout), so a nimbus that accepts connections but
// does not answer (a stopped process) does not hold a call until the
// caller's deadline: the call moves on to the next address or retries.
// SubmitTopology is not bounded by it; its context is.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) { o.callTimeout = d }
}

// WithRetry sets the retry budget of leader-only calls and of the leader
// lookup of SubmitTopology: at most maxAttempts attempts (<= 0: no limit)
// within maxTotal (<= 0: no limit; the context still bounds the call).
// The default is no attempt limit within DefaultRetryTimeout.
// WithRetry(1, 0) disables retries.
func WithRetry(maxAttempts int, maxTotal time.Duration) Option {
	return func(o *options) { o.maxAttempts, o.retryTimeout = maxAttempts, maxTotal }
}

// WithLogger logs retries and redirects at debug level (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithTLS makes the client speak TLS with cfg: the nimbuses' certificates
// are verified against cfg's roots (for each address's host), and cfg's
// client certificate, if any, identifies the caller to nimbuses that
// require one. Without it the client speaks plaintext.
func WithTLS(cfg *tls.Config) Option { return WithTransportCredentials(credentials.NewTLS(cfg)) }

// WithTransportCredentials makes the client connect with creds, such as
// certs.Reloader.ClientCredentials (TLS with a certificate that is re-read
// when it changes). A handshake that fails is not retried: the error says
// why (a *HandshakeError in the SeedFailure's Dial).
func WithTransportCredentials(creds credentials.TransportCredentials) Option {
	return func(o *options) { o.creds = creds }
}

// WithDialOptions adds gRPC dial options, applied after the client's own
// (transport credentials, a dialer bounded by the dial timeout,
// reconnect backoff capped at 2 s), so they can override them.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}
