package daemon

import (
	"context"
	"log/slog"
	"sync"
)

// Lifecycle keeps what a daemon's Start started, so that its Close can stop
// it: the goroutines (Go, Wait), and the stops, each registered beside the
// start of what it stops (OnClose) and run by Close in the reverse order,
// so that every part stops before what it depends on. It also carries the
// daemon's readiness (Announce, Ready) and fatal error (Fail, Err), which
// its owner waits for. The zero value is ready to use.
type Lifecycle struct {
	wg      sync.WaitGroup
	stops   []func()
	once    sync.Once
	errOnce sync.Once
	errc    chan error
	rdyOnce sync.Once
	ready   chan struct{}
}

// Go runs f in a goroutine that Wait waits for.
func (l *Lifecycle) Go(f func()) { l.wg.Go(f) }

// Wait blocks until every goroutine started with Go has returned.
func (l *Lifecycle) Wait() { l.wg.Wait() }

// OnClose registers stop to be run by Close. Register from the goroutine
// that starts the daemon, before Close can run.
func (l *Lifecycle) OnClose(stop func()) { l.stops = append(l.stops, stop) }

// Close tells the service manager the daemon is stopping (Notify), then
// runs the registered stops, the last registered first, once; later calls
// return at once.
func (l *Lifecycle) Close() {
	l.once.Do(func() {
		// A manager that misses this still sees the main process exit.
		_ = Notify(NotifyStopping)
		for i := len(l.stops) - 1; i >= 0; i-- {
			l.stops[i]()
		}
	})
}

// Announce waits until every channel of waitFor is closed, then logs msg
// with attrs (the ready line that scripts and tests wait for), tells the
// service manager (Notify: READY=1, msg as the unit's status) and closes
// Ready. It gives up when ctx ends. Run it with Go.
func (l *Lifecycle) Announce(ctx context.Context, log *slog.Logger, msg string, attrs func() []any, waitFor ...<-chan struct{}) {
	for _, c := range waitFor {
		select {
		case <-c:
		case <-ctx.Done():
			return
		}
	}
	log.Info(msg, attrs()...)
	if err := Notify(NotifyReady + "\nSTATUS=" + msg); err != nil {
		log.Warn("cannot tell the service manager the daemon is ready", "err", err)
	}
	close(l.readyChan())
}

// Ready is closed once Announce has logged the ready line.
func (l *Lifecycle) Ready() <-chan struct{} { return l.readyChan() }

func (l *Lifecycle) readyChan() chan struct{} {
	l.rdyOnce.Do(func() { l.ready = make(chan struct{}) })
	return l.ready
}

// Fail reports a fatal error on Err; only the first is kept.
func (l *Lifecycle) Fail(err error) {
	select {
	case l.errs() <- err:
	default:
	}
}

// Err delivers the first fatal error; the daemon's owner should Close.
func (l *Lifecycle) Err() <-chan error { return l.errs() }

func (l *Lifecycle) errs() chan error {
	l.errOnce.Do(func() { l.errc = make(chan error, 1) })
	return l.errc
}
