package cluster

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/apierr"
)

// What a call's error means to the request: go-zookeeper's transport
// failures become apierr's meanings; ZooKeeper's answers stay as they are.
// Only a read whose connection closed is surely "nothing written"
// (ErrUnavailable).
func TestFailureMeaning(t *testing.T) {
	for _, tc := range []struct {
		err   error
		write bool
		want  error // nil: unchanged
	}{
		{zk.ErrNoServer, false, apierr.ErrUnavailable},
		{zk.ErrNoServer, true, apierr.ErrUnavailable},
		{zk.ErrSessionExpired, true, apierr.ErrUnavailable},
		{zk.ErrClosing, false, apierr.ErrUnavailable},
		{zk.ErrConnectionClosed, false, apierr.ErrUnavailable}, // a read wrote nothing
		{zk.ErrConnectionClosed, true, apierr.ErrOutcomeUnknown},
		{zk.ErrNoNode, true, nil},
		{zk.ErrBadVersion, true, nil},
	} {
		got := failure(tc.write, "op", tc.err)
		if tc.want == apierr.ErrUnavailable && tc.err != zk.ErrConnectionClosed && errors.Is(got, ErrUnavailable) {
			t.Errorf("failure(write=%v, %v) = %v: it may have been sent, so not cluster.ErrUnavailable (nothing written)", tc.write, tc.err, got)
		}
		switch {
		case tc.want == nil && got != tc.err:
			t.Errorf("failure(write=%v, %v) = %v; want it unchanged", tc.write, tc.err, got)
		case tc.want != nil && !errors.Is(got, tc.want):
			t.Errorf("failure(write=%v, %v) = %v; want it to mean %v", tc.write, tc.err, got, tc.want)
		}
	}
}
