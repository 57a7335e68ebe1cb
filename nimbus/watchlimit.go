package nimbus

import (
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
)

// watchLimit bounds the health Watch streams one caller holds open: each
// is a goroutine and a stream for as long as the caller likes, and any
// authenticated principal may open them (nimbus.grpc.max.watch.streams).
// A caller is its principal, or, without authentication, its host.
type watchLimit struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func newWatchLimit(max int) *watchLimit { return &watchLimit{max: max, open: map[string]int{}} }

// interceptor refuses a Watch beyond the caller's bound with
// RESOURCE_EXHAUSTED; it runs after authentication.
func (l *watchLimit) interceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != healthpb.Health_Watch_FullMethodName {
		return handler(srv, ss)
	}
	caller, ok := auth.FromContext(ss.Context())
	if !ok {
		// Without a principal, the host: a new connection (another
		// source port) must not be a new caller.
		if p, ok := peer.FromContext(ss.Context()); ok {
			caller = p.Addr.String()
			if host, _, err := net.SplitHostPort(caller); err == nil {
				caller = host
			}
		}
	}
	if !l.acquire(caller) {
		return apistatus.ToStatus(fmt.Errorf("%w: %s holds %d health Watch streams already, the most one caller may (%s)",
			apierr.ErrResourceExhausted, caller, l.max, configs.KeyNimbusMaxWatches))
	}
	defer l.release(caller)
	return handler(srv, ss)
}

func (l *watchLimit) acquire(caller string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[caller] >= l.max {
		return false
	}
	l.open[caller]++
	return true
}

func (l *watchLimit) release(caller string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[caller]--; l.open[caller] == 0 {
		delete(l.open, caller)
	}
}
