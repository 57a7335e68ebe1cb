package daemon

import "sync"

// Lifecycle keeps what a daemon's Start started, so that its Close can stop
// it: the goroutines (Go, Wait), and the stops, each registered beside the
// start of what it stops (OnClose) and run by Close in the reverse order,
// so that every part stops before what it depends on. It also carries the
// daemon's fatal error (Fail, Err). The zero value is ready to use.
type Lifecycle struct {
	wg      sync.WaitGroup
	stops   []func()
	once    sync.Once
	errOnce sync.Once
	errc    chan error
}

// Go runs f in a goroutine that Wait waits for.
func (l *Lifecycle) Go(f func()) { l.wg.Go(f) }

// Wait blocks until every goroutine started with Go has returned.
func (l *Lifecycle) Wait() { l.wg.Wait() }

// OnClose registers stop to be run by Close. Register from the goroutine
// that starts the daemon, before Close can run.
func (l *Lifecycle) OnClose(stop func()) { l.stops = append(l.stops, stop) }

// Close runs the registered stops, the last registered first, once; later
// calls return at once.
func (l *Lifecycle) Close() {
	l.once.Do(func() {
		for i := len(l.stops) - 1; i >= 0; i-- {
			l.stops[i]()
		}
	})
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
