package notify

import "testing"

func TestNotifyClosesOnlyChannelsTakenBeforeIt(t *testing.T) {
	var n Notifier
	before := n.Changed()
	if Closed(before) {
		t.Fatal("closed before any Notify")
	}
	if again := n.Changed(); again != before {
		t.Fatal("two channels for one change")
	}
	n.Notify()
	if !Closed(before) {
		t.Fatal("a channel taken before Notify is still open after it")
	}
	after := n.Changed()
	if Closed(after) {
		t.Fatal("a channel taken after Notify is already closed")
	}
	n.Notify()
	n.Notify() // nobody listening: a no-op, never a double close
	if !Closed(after) {
		t.Fatal("second change not announced")
	}
}
