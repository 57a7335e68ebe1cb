package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/internal/notify"
)

// ErrNoSession is returned when the ZooKeeper session could not be
// established in time.
var ErrNoSession = errors.New("cluster: no ZooKeeper session")

// SessionConfig says how to reach ZooKeeper.
type SessionConfig struct {
	Servers        []string // host:port
	SessionTimeout time.Duration
	// ConnectTimeout bounds how long Connect waits for the first session.
	ConnectTimeout time.Duration
	Root           string // storm.zookeeper.root, e.g. "/storm"
	Logger         *slog.Logger
	// Dialer replaces net.DialTimeout; tests use it to cut the network.
	// With TLS it dials the TCP connections the handshakes run on.
	Dialer zk.Dialer
	// TLS, when set, makes every connection TLS (storm.zookeeper.ssl.*):
	// there is then no plaintext path to ZooKeeper.
	TLS *TLS

	// AuthScheme is storm.zookeeper.auth.scheme: "" (no authentication,
	// every node open to anyone) or AuthDigest. With AuthDigest, Connect
	// authenticates with AuthPayload before it returns, the session
	// authenticates again on every reconnection, and every node the
	// daemons create gets the ACL described at Session.ACL.
	AuthScheme string
	// AuthPayload is storm.zookeeper.auth.payload, user:password for
	// AuthDigest. It is a secret: nothing here logs it or puts it in an
	// error.
	AuthPayload string
	// SuperACL is storm.zookeeper.superACL, scheme:id (for example
	// digest:admin:<base64 sha1 of admin:password>, or sasl:admin): an
	// identity given every permission on the daemons' nodes besides the
	// cluster's own. It is used only with AuthScheme.
	SuperACL string
}

// Session is one ZooKeeper session shared by the parts of a process.
//
// Its state is level-triggered: State reports the current state and
// session id, and Changed returns a channel that is closed at the next
// change. go-zookeeper's event channel drops events when full; this never
// does, because waiters re-read the state instead of counting events. A
// session id that differs from the one a part started with means the old
// session expired and its ephemeral nodes and watches are gone.
type Session struct {
	conn    atomic.Pointer[zk.Conn] // set once Connect returns from zk
	paths   Paths
	servers []string
	access  access
	log     *slog.Logger
	// rootCzxid is the creation zxid of the root as last seen (see
	// NoticeRoot): 0 before the first look, rootMissing when it was gone.
	rootCzxid atomic.Int64
	// calls counts the calls Call abandoned that ZooKeeper has not
	// answered yet (call.go).
	calls calls

	mu    sync.Mutex
	state zk.State
	// established counts the connections that reached StateHasSession:
	// each is a new TCP connection, on which go-zookeeper sends the
	// stored credentials again (see authenticate).
	established int64
	changes     notify.Notifier
}

// Connect opens a session and waits until it is established, ctx ends, or
// ConnectTimeout passes. The returned Session must be closed.
func Connect(ctx context.Context, cfg SessionConfig) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	acc, err := newAccess(cfg)
	if err != nil {
		return nil, err
	}
	s := &Session{
		paths:   Paths{Root: cfg.Root},
		servers: slices.Clone(cfg.Servers),
		access:  acc,
		log:     cfg.Logger.With("component", "zk"),
		state:   zk.StateDisconnected,
	}
	raw := cfg.Dialer
	if raw == nil {
		raw = net.DialTimeout
	}
	var failures lastFailure
	var hosts zk.HostProvider = zk.NewDNSHostProvider() // go-zookeeper's default
	if cfg.TLS != nil {
		hosts = &namedHosts{}
	}
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithEventCallback(s.onEvent),
		zk.WithLogger(zkLogger{s.log}), zk.WithDialer(cfg.TLS.dialer(raw, &failures)), zk.WithHostProvider(hosts))
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to %v: %w", cfg.Servers, err)
	}
	s.conn.Store(conn)

	wait := cfg.ConnectTimeout
	if wait <= 0 {
		wait = cfg.SessionTimeout
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	if err := s.awaitSession(ctx, timer.C, fmt.Errorf("%w: %v did not answer within %v", ErrNoSession, cfg.Servers, wait)); err != nil {
		conn.Close()
		if last := failures.last(); last != nil && errors.Is(err, ErrNoSession) {
			err = fmt.Errorf("%w; the last attempt: %w", err, last)
		}
		return nil, err
	}
	if err := s.authenticate(ctx, timer.C); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// authenticate adds the session's credentials to the connection, if it
// has any, and returns once they are stored for every later connection.
//
// go-zookeeper (v1.0.4) keeps what AddAuth sent once the server accepted
// it, and sends it again on every new connection, for the same session or
// a new one after expiry, before any queued request (resendZkAuth, run
// after it reports StateHasSession and before its send loop starts). It
// stores the credentials only after the server's answer, though: a
// connection established between that answer and the store would go
// without them. So AddAuth is repeated until no connection was established
// while it ran (onEvent counts them, synchronously, before the resend);
// each repetition stores the credentials once more, which costs a packet
// per reconnection.
func (s *Session) authenticate(ctx context.Context, timeout <-chan time.Time) error {
	if s.access.scheme == "" {
		return nil
	}
	conn := s.Conn()
	for {
		before := s.connections()
		// AddAuth waits for a connection as long as it takes; Connect's
		// caller closes conn on a timeout, which ends it.
		done := make(chan error, 1)
		go func() { done <- conn.AddAuth(s.access.scheme, s.access.payload) }()
		var err error
		select {
		case err = <-done:
		case <-timeout:
			return fmt.Errorf("%w: no answer while authenticating as %q", ErrNoSession, s.access.user)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err == nil && s.connections() == before {
			return nil
		}
		if err != nil && !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrSessionExpired) {
			return fmt.Errorf("cluster: authenticate to ZooKeeper as %q: %w", s.access.user, err)
		}
		// Lost the connection, or a new one came up meanwhile: again, on
		// an established session.
		if err := s.awaitSession(ctx, timeout, fmt.Errorf("%w: lost while authenticating as %q", ErrNoSession, s.access.user)); err != nil {
			return err
		}
	}
}

// awaitSession returns once the session is established: late if timeout
// fires first, ctx's error if ctx ends first.
func (s *Session) awaitSession(ctx context.Context, timeout <-chan time.Time, late error) error {
	for {
		state, _, changed := s.State()
		if state == zk.StateHasSession {
			return nil
		}
		select {
		case <-changed:
		case <-timeout:
			return late
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// connections is how many connections have reached StateHasSession.
func (s *Session) connections() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.established
}

// onEvent runs on go-zookeeper's connection goroutine: it must not block.
// It may run before Connect has stored the connection, so it records only
// the state; State reads the session id from the connection.
func (s *Session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	s.state = ev.State
	if ev.State == zk.StateHasSession {
		s.established++
	}
	s.mu.Unlock()
	s.changes.Notify()
	s.log.Debug("session state", "state", ev.State.String(), "server", ev.Server)
}

// State returns the session's state, its id (zero while there is none),
// and a channel closed at the next change. go-zookeeper stores a new id
// before it reports StateHasSession, so a caller that sees HasSession
// sees the id of that session or a later one.
func (s *Session) State() (zk.State, int64, <-chan struct{}) {
	changed := s.changes.Changed() // before the state: no change goes unseen
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	var id int64
	if conn := s.conn.Load(); conn != nil {
		id = conn.SessionID()
	}
	return state, id, changed
}

// Conn is the underlying connection, for the typed operations of this
// package and of package leader.
func (s *Session) Conn() *zk.Conn { return s.conn.Load() }

// Paths are the cluster's ZooKeeper paths.
func (s *Session) Paths() Paths { return s.paths }

// WaitSession blocks until the session is established (not merely
// connected) or ctx ends, and returns the session id.
func (s *Session) WaitSession(ctx context.Context) (int64, error) {
	for {
		state, id, changed := s.State()
		if state == zk.StateHasSession && id != 0 {
			return id, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Close ends the session: its ephemeral nodes disappear at once. It
// returns once the goroutines of calls still out (Call) have ended, which
// the closed connection answers at once.
func (s *Session) Close() {
	s.Conn().Close()
	s.calls.running.Wait() // a closed connection answers every call still out
}

// zkLogger sends go-zookeeper's printf logging to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}
