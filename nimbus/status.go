package nimbus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/notify"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// watchStatus keeps health and metrics in step with the session, the
// caches, the code store, the code held and this nimbus's own term, and
// logs leader changes it sees.
func (s *Server) watchStatus(ctx context.Context) {
	v, m := s.view, s.metrics
	var lastEpoch int64 // zero: no leader seen yet
	for {
		// Take every wake-up channel before reading what it guards: a
		// change in between would otherwise go unseen until the next one.
		state, _, sessChanged := s.sess.State()
		elected, locks, nimbuses := s.election.Changed(), v.Locks.Changed(), v.Nimbuses.Changed()
		storeChanged, storeErr := s.storeHealth.state()
		connected := state == cluster.StateHasSession
		loaded := notify.Closed(v.Nimbuses.Loaded()) && notify.Closed(v.Locks.Loaded()) && notify.Closed(v.Storms.Loaded())
		serving := connected && loaded && storeErr == nil
		setServing(s.health, "", serving)
		// Queued is codesync's verdict (the election's gate): every
		// topology a leader needs is held here, verified.
		setServing(s.health, nimbusv1.ReadyHealthService, serving && s.election.Queued())
		term := s.election.Current()
		setServing(s.health, nimbusv1.LeaderHealthService, term != nil)
		m.isLeader.Set(boolFloat(term != nil))
		m.zkConnected.Set(boolFloat(connected))

		head, epoch, ok := v.Leader()
		if !ok {
			epoch = 0
		}
		if epoch != lastEpoch {
			m.epoch.Set(float64(epoch))
			if ok {
				m.leaderChanges.Inc()
				s.log.Info("leader changed", "leader", cluster.HostPort(head), "epoch", epoch)
			}
			lastEpoch = epoch
		}
		select {
		case <-ctx.Done():
			return
		case <-sessChanged:
		case <-elected:
		case <-locks: // also closed when a cache loads
		case <-nimbuses:
		case <-storeChanged:
		}
	}
}

// storeHealth is whether the local code store can be written. A
// submission whose write to the store fails because the filesystem is
// full or read-only, or that finds less than storeHeadroom free, marks it
// failed (failed), as does the check probeStore makes every
// storeCheckEvery on every nimbus, followers included; from then until a
// probe succeeds, health "" is NOT_SERVING and submissions are refused at
// once with the same error, without reading their artifact.
type storeHealth struct {
	mu      sync.Mutex
	err     error // nil while writable
	changed notify.Notifier
}

// state returns a channel closed at the next change, then the store's
// failure (nil while writable).
func (h *storeHealth) state() (<-chan struct{}, error) {
	ch := h.changed.Changed()
	h.mu.Lock()
	defer h.mu.Unlock()
	return ch, h.err
}

// set records the store's state and reports whether it changed.
func (h *storeHealth) set(err error) bool {
	h.mu.Lock()
	changed := (h.err == nil) != (err == nil)
	h.err = err
	h.mu.Unlock()
	if changed {
		h.changed.Notify()
	}
	return changed
}

// failed records that err, a write to the store classified as full or
// read-only (codedistributor.Store.WriteError), failed; other errors are
// not about the store's filesystem and change nothing. It returns err.
func (h *storeHealth) failed(err error, log *slog.Logger) error {
	if !isStoreFailure(err) {
		return err
	}
	if h.set(err) {
		log.Error("the code store cannot be written: health NOT_SERVING and submissions refused until a probe write succeeds",
			"err", err, "probe_every", storeProbeEvery)
	}
	return err
}

// How often probeStore looks at the store: a writable one's filesystem
// (statfs, which costs nothing), and a failed one with a probe write.
const (
	storeCheckEvery = 5 * time.Second
	storeProbeEvery = time.Second
)

// probeStore watches the store until ctx ends. While it is writable, a
// filesystem that became read-only or has less than storeHeadroom free
// marks it failed, so a follower, which receives no submissions, says so
// too. While it is failed, it is probed until it can be written again: a
// probe write (codedistributor.Store.Probe: a 64 KiB file written, synced
// and removed) succeeds, and the filesystem has storeHeadroom free, so a
// store that is still nearly full does not flap back to SERVING.
func (s *Server) probeStore(ctx context.Context) {
	for {
		changed, failed := s.storeHealth.state()
		wait := storeCheckEvery
		if failed != nil {
			wait = storeProbeEvery
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			continue
		case <-time.After(wait):
		}
		switch err := s.checkStore(failed != nil); {
		case err != nil && failed == nil:
			s.storeHealth.failed(err, s.log)
		case err != nil:
			s.storeHealth.set(err) // still failed; keep the latest reason
		case failed != nil && s.storeHealth.set(nil):
			s.log.Info("the code store can be written again: health SERVING")
		}
	}
}

// checkStore looks at the store's filesystem and, with probe, writes to
// it (see probeStore).
func (s *Server) checkStore(probe bool) error {
	if probe {
		if err := s.store.Probe(); err != nil {
			return err
		}
	}
	free, err := s.store.Free()
	if err != nil {
		return err
	}
	return lowOnSpace(s.store, free)
}

// lowOnSpace says, as a full store, that store has less than
// storeHeadroom free.
func lowOnSpace(store *codedistributor.Store, free int64) error {
	if free >= storeHeadroom {
		return nil
	}
	return fmt.Errorf("%w (%s): %d bytes free, under the %d kept free", codedistributor.ErrStoreFull, store.Root(), free, storeHeadroom)
}

func setServing(h *health.Server, service string, ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	h.SetServingStatus(service, st)
}

// boolFloat is a gauge's value for b.
func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
