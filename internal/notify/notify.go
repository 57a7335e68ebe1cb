// Package notify is how the parts of a daemon announce that their state
// changed: a Notifier hands out a channel that is closed at the next change.
// A reader takes the channel first, then reads the state it guards, then
// waits on the channel: a change in between closes the channel it holds, so
// no change goes unseen. Unlike events sent on a channel, a notification
// never fills a buffer, never blocks the writer and is never dropped; readers
// re-read the state instead of counting events.
package notify

import "sync"

// Notifier announces changes. The zero value is ready to use; it must not
// be copied after first use.
type Notifier struct {
	mu sync.Mutex
	ch chan struct{} // nil until someone asks
}

// Changed returns a channel that is closed at the next Notify.
func (n *Notifier) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// Notify wakes everyone waiting on a channel from Changed. Call it after
// the state has changed.
func (n *Notifier) Notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// Closed reports whether c is closed, without waiting.
func Closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
