package leading

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/leader"
)

// snapshots saves a snapshot of the cluster (Config.Snapshot) every
// nimbus.snapshot.interval.secs into Config.SnapshotDir, and keeps the last
// nimbus.snapshot.retain. One whose state (its zxid) is the last saved's is
// not kept: a quiet cluster's snapshots reach back as far as its last
// change. Taking one walks every persistent node, a second at a large
// cluster, so it runs in a goroutine of the duty's own, one at a time,
// never in the round; stop waits for it.
type snapshots struct {
	take   func(ctx context.Context, w io.Writer) (zxid int64, err error)
	dir    string
	every  time.Duration
	retain int
	log    *slog.Logger

	ctx    context.Context // the term's
	next   time.Time
	wg     sync.WaitGroup
	mu     sync.Mutex
	taking bool
}

func newSnapshots(term *leader.Term, cfg Config, log *slog.Logger) *snapshots {
	return &snapshots{take: cfg.Snapshot, dir: cfg.SnapshotDir, every: cfg.Nimbus.SnapshotInterval,
		retain: cfg.Nimbus.SnapshotRetain, log: log, ctx: term.Context()}
}

func (s *snapshots) round(r roundState) time.Time {
	if s.take == nil || s.every <= 0 {
		return time.Time{}
	}
	if r.now.Before(s.next) {
		return s.next
	}
	s.next = r.now.Add(s.every)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.taking {
		s.taking = true
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				s.taking = false
				s.mu.Unlock()
			}()
			if err := s.save(); err != nil && s.ctx.Err() == nil {
				s.log.Warn("cannot save the cluster's snapshot; trying again at the next", "err", err, "interval", s.every)
			}
		})
	}
	return s.next
}

func (s *snapshots) stop() { s.wg.Wait() }

// snapshotExt names the leader's snapshot files: snapshot-<time>-<zxid>.
const snapshotExt = ".snapshot"

// save takes a snapshot into a temporary file, keeps it under its time and
// zxid unless the last one has that zxid, and prunes the oldest.
func (s *snapshots) save() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil { // confs may hold secrets
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".taking-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	started := time.Now()
	zxid, err := s.take(s.ctx, tmp)
	if err != nil {
		return err
	}
	saved := s.saved()
	if len(saved) > 0 && strings.HasSuffix(saved[len(saved)-1], fmt.Sprintf("-%016x%s", zxid, snapshotExt)) {
		return nil // nothing changed since
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	name := fmt.Sprintf("snapshot-%s-%016x%s", started.UTC().Format("20060102T150405.000Z"), zxid, snapshotExt)
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, name)); err != nil {
		return err
	}
	s.log.Info("cluster snapshot saved", "file", filepath.Join(s.dir, name), "took", time.Since(started).Round(time.Millisecond))
	for _, old := range s.saved()[:max(0, len(saved)+1-s.retain)] {
		_ = os.Remove(filepath.Join(s.dir, old))
	}
	return nil
}

// saved lists the snapshots in the directory, oldest first.
func (s *snapshots) saved() []string {
	entries, _ := os.ReadDir(s.dir)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "snapshot-") && strings.HasSuffix(e.Name(), snapshotExt) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // the time in the name sorts them
	return names
}
