package bittorrent

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
)

// When a download gives up. A fetcher tries again later either way.
const (
	// aloneFor: nobody else is in the swarm: nobody can send anything.
	aloneFor = 5 * time.Second
	// stalledFor: peers are there, but nothing arrives.
	stalledFor = time.Minute
	// reconnectAfter: peers are connected, but nothing arrives. Their
	// connections are closed and dialled again, which starts the requests
	// afresh: the library (v1.61.0) can leave a connection to a seed with
	// no request in flight and none to come, waiting on the other side.
	reconnectAfter = 10 * time.Second
)

// Download fetches the bundle from the swarm into dir: every piece is
// checked against the torrent as it arrives, every file against the
// meta's SHA-256 at the end.
func (d *distributor) Download(ctx context.Context, dir string, code codedistributor.Code) error {
	mi, info, err := torrentOf(code.Meta)
	if err != nil {
		return err
	}
	s, err := spec(mi, fileStorage{dir: dir})
	if err != nil {
		return err
	}
	b := bundle{code.Kind, code.TopologyID}
	a, err := d.add(b, s, "")
	if err != nil {
		return err
	}
	start := time.Now()
	// The library stops a download whose write failed (a full disk, say)
	// and says no more: fail at once with the cause.
	writeErr := make(chan error, 1)
	a.t.SetOnWriteChunkError(func(err error) {
		select {
		case writeErr <- err:
		default:
		}
	})
	a.t.DownloadAll()
	err = d.await(ctx, code.TopologyID, a, writeErr)
	// Dropping closes the files before anyone reads or moves them.
	d.drop(b, a)
	if err != nil {
		return err
	}
	d.p.Logger.Debug("torrent downloaded", b.logAttr(), "bytes", info.TotalLength(),
		"elapsed", time.Since(start).Round(time.Millisecond))
	for _, f := range code.Meta.GetFiles() {
		size, sum, err := codedistributor.HashFile(filepath.Join(dir, f.GetName()))
		if err != nil {
			return err
		}
		if size != f.GetSize() || !bytes.Equal(sum, f.GetSha256()) {
			return fmt.Errorf("%w: %s/%s from the swarm has %d bytes with SHA-256 %s, meta says %d bytes, %s",
				codedistributor.ErrCorrupt, code.TopologyID, f.GetName(), size, codedistributor.Hex(sum), f.GetSize(), codedistributor.Hex(f.GetSha256()))
		}
	}
	return nil
}

// await returns when a's download completes, ctx ends, or nobody can
// finish it: nobody else in the swarm for aloneFor, or no progress for
// stalledFor. Pieces that failed their check make the failure ErrCorrupt.
func (d *distributor) await(ctx context.Context, topologyID string, a *active, writeErr <-chan error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var completed int64
	progressed, accompanied, reconnected := time.Now(), time.Now(), time.Now()
	for {
		select {
		case <-a.t.Complete().On():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case err := <-writeErr:
			return fmt.Errorf("bittorrent: write the code of %s: %w", topologyID, err)
		case <-a.t.Closed():
			return fmt.Errorf("bittorrent: download of %s stopped (closing, or replaced)", topologyID)
		case now := <-tick.C:
			if n := a.t.BytesCompleted(); n > completed {
				completed, progressed = n, now
			}
			if a.others.Load() > 0 {
				accompanied = now
			}
			var why string
			switch {
			case now.Sub(accompanied) >= aloneFor:
				why = fmt.Sprintf("no other peer in its swarm for %s", aloneFor)
			case now.Sub(progressed) >= stalledFor:
				why = fmt.Sprintf("no progress for %s from %d peers (connected to %v)", stalledFor, a.others.Load(), connectedTo(a))
			case now.Sub(progressed) >= reconnectAfter && now.Sub(reconnected) >= reconnectAfter:
				reconnected = now
				if conns := a.t.PeerConns(); len(conns) > 0 {
					d.p.Logger.Info("download stalled; reconnecting to its peers", "topology", topologyID,
						"connected", connectedTo(a), "bytes", completed, "of", a.t.Length())
					for _, c := range conns {
						c.Close() // findPeers dials the members again
					}
				}
				continue
			default:
				continue
			}
			if stats := a.t.Stats(); stats.PiecesDirtiedBad.Int64() > 0 {
				return fmt.Errorf("%w: %s: %d pieces failed their hash check, and %s", codedistributor.ErrCorrupt, topologyID, stats.PiecesDirtiedBad.Int64(), why)
			}
			return fmt.Errorf("%w: %s: %s (%d of %d bytes)", codedistributor.ErrNotHeld, topologyID, why, completed, a.t.Length())
		}
	}
}

// connectedTo lists the addresses of a's connected peers, for logs.
func connectedTo(a *active) []string {
	var addrs []string
	for _, c := range a.t.PeerConns() {
		addrs = append(addrs, c.RemoteAddr.String())
	}
	return addrs
}
