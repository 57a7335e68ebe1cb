package daemon

import (
	"context"
	"log/slog"
	"sync"

	"github.com/nimbusha/nimbus/cluster"
)

// Register keeps node, a daemon's registration, in a goroutine of lc until
// ctx ends (cluster.EphemeralNode.Keep: created again after an expiry or a
// deletion), and returns a channel closed once it first exists. node.Ready,
// if set, still runs at every creation.
func Register(ctx context.Context, lc *Lifecycle, sess *cluster.Session, node cluster.EphemeralNode, log *slog.Logger) <-chan struct{} {
	registered := make(chan struct{})
	var once sync.Once
	each := node.Ready
	node.Ready = func() {
		once.Do(func() { close(registered) })
		if each != nil {
			each()
		}
	}
	lc.Go(func() { node.Keep(ctx, sess, log) })
	return registered
}
