package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	Dialer zk.Dialer
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
	conn  atomic.Pointer[zk.Conn] // set once Connect returns from zk
	paths Paths
	log   *slog.Logger
	// rootCzxid is the creation zxid of the root as last seen (see
	// NoticeRoot): 0 before the first look, rootMissing when it was gone.
	rootCzxid atomic.Int64

	mu      sync.Mutex
	state   zk.State
	changes notify.Notifier
}

// Connect opens a session and waits until it is established, ctx ends, or
// ConnectTimeout passes. The returned Session must be closed.
func Connect(ctx context.Context, cfg SessionConfig) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Session{
		paths: Paths{Root: cfg.Root},
		log:   cfg.Logger.With("component", "zk"),
		state: zk.StateDisconnected,
	}
	dialer := cfg.Dialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithEventCallback(s.onEvent), zk.WithLogger(zkLogger{s.log}), zk.WithDialer(dialer))
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
	for {
		state, _, changed := s.State()
		if state == zk.StateHasSession {
			return s, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			conn.Close()
			return nil, fmt.Errorf("%w: %v did not answer within %v", ErrNoSession, cfg.Servers, wait)
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
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

// Close ends the session: its ephemeral nodes disappear at once.
func (s *Session) Close() { s.Conn().Close() }

// zkLogger sends go-zookeeper's printf logging to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}
