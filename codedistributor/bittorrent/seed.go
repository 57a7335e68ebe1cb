package bittorrent

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
)

// resyncEvery paces looks at the store besides those its changes cause,
// to notice copies altered or removed behind the store's back.
const resyncEvery = 2 * time.Second

// errOtherBackend: a bundle some other distributor stored; not seeded.
var errOtherBackend = errors.New("bittorrent: stored by another distributor")

// seedStore keeps the client seeding exactly the verified bundles of the
// store, until Close.
func (d *distributor) seedStore() {
	// Bundles found unfit to seed, by fingerprint: not read again until
	// they change.
	rejected := map[string]string{}
	tick := time.NewTicker(resyncEvery)
	defer tick.Stop()
	for {
		changed := d.p.Store.Changed()
		d.reseed(rejected)
		select {
		case <-d.ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// reseed starts seeding new or changed bundles and stops seeding those
// that are gone or no longer verify.
func (d *distributor) reseed(rejected map[string]string) {
	store := d.p.Store
	ids, err := store.IDs()
	if err != nil {
		d.p.Logger.Warn("cannot list the store", "err", err)
		return
	}
	held := make(map[string]bool, len(ids))
	for id := range ids {
		if d.ctx.Err() != nil {
			return
		}
		held[id] = true
		fp, err := fingerprint(store.Dir(id))
		if err != nil || rejected[id] == fp {
			continue
		}
		d.mu.Lock()
		a, cleaned := d.torrents[id], d.cleaned[id]
		d.mu.Unlock()
		if cleaned || (a != nil && (a.seeded == fp || a.seeded == "")) {
			continue // cleaned up, seeded as it is, or being downloaded
		}
		err = d.seed(id, fp)
		if err == nil {
			continue
		}
		if a != nil {
			d.drop(id, a)
		}
		switch {
		case errors.Is(err, errOtherBackend):
			rejected[id] = fp
		case errors.Is(err, codedistributor.ErrCorrupt):
			// Not again until the bundle changes: its owner re-fetches it.
			rejected[id] = fp
			d.p.Logger.Error("not seeding code that does not verify", "topology", id, "err", err)
			d.p.Store.ReportCorrupt(id)
		default: // tried again on the next pass
			d.p.Logger.Warn("cannot seed code", "topology", id, "err", err)
		}
	}
	for id := range rejected {
		if !held[id] {
			delete(rejected, id)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, a := range d.torrents {
		if a.seeded != "" && !held[id] {
			d.dropLocked(id)
		}
	}
	for id := range d.cleaned {
		if !held[id] {
			delete(d.cleaned, id) // its code is gone here; the id is never reused
		}
	}
}

// seed verifies the stored bundle of id and seeds it from where it lies.
func (d *distributor) seed(id, fp string) error {
	store := d.p.Store
	_, meta, digest, err := store.Meta(id)
	if err != nil {
		return err
	}
	if meta.GetDistributor() != Name {
		return errOtherBackend
	}
	if err := store.Verify(id, digest); err != nil {
		return err
	}
	mi, _, err := torrentOf(meta)
	if err != nil {
		return err
	}
	s, err := spec(mi, fileStorage{dir: store.Dir(id), seed: true})
	if err != nil {
		return err
	}
	a, err := d.add(id, s, fp)
	if err != nil {
		return err
	}
	a.t.DisallowDataDownload() // the option in the spec is not read by v1.61.0
	// Every downloader wants what only the first seed has, and each asks
	// it for up to a thousand blocks at once: served all together, the
	// leader sends the code once per node. Serving a few at a time, the
	// rest fetch from those and from each other.
	a.t.SetMaxEstablishedConns(d.p.Config.BittorrentSeedPeers)
	d.p.Logger.Debug("seeding", "topology", id, "infohash", mi.HashInfoBytes().HexString())
	return nil
}

// fingerprint describes a bundle directory by its files' names, sizes
// and modification times: what changes when anything rewrites it.
func fingerprint(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:%d:%d;", e.Name(), fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}
