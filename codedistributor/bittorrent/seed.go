package bittorrent

import (
	"errors"
	"fmt"
	"io/fs"
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
// node's stores (its code, and its blobs if it keeps any), until Close.
func (d *distributor) seedStore() {
	// Bundles found unfit to seed, by fingerprint: not read again until
	// they change.
	rejected := map[bundle]string{}
	tick := time.NewTicker(resyncEvery)
	defer tick.Stop()
	for {
		changed := d.p.Store.Changed()
		var blobsChanged <-chan struct{} // nil: a node without blobs
		d.reseed(codedistributor.KindCode, d.p.Store, rejected)
		if d.p.Blobs != nil {
			blobsChanged = d.p.Blobs.Changed()
			d.reseed(codedistributor.KindBlob, d.p.Blobs, rejected)
		}
		select {
		case <-d.ctx.Done():
			return
		case <-changed:
		case <-blobsChanged:
		case <-tick.C:
		}
	}
}

// reseed starts seeding new or changed bundles of kind, which store
// holds, and stops seeding those that are gone or no longer verify.
func (d *distributor) reseed(kind codedistributor.Kind, store *codedistributor.Store, rejected map[bundle]string) {
	ids, err := store.IDs()
	if err != nil {
		d.p.Logger.Warn("cannot list the store", "kind", kind.String(), "err", err)
		return
	}
	held := make(map[string]bool, len(ids))
	for id := range ids {
		if d.ctx.Err() != nil {
			return
		}
		held[id] = true
		b := bundle{kind, id}
		fp, err := fingerprint(store.Dir(id))
		if err != nil || rejected[b] == fp {
			continue
		}
		d.mu.Lock()
		a, cleaned := d.torrents[b], d.cleaned[b]
		d.mu.Unlock()
		if cleaned || (a != nil && (a.seeded == fp || a.seeded == "")) {
			continue // cleaned up, seeded as it is, or being downloaded
		}
		err = d.seed(store, b, fp)
		if err == nil {
			continue
		}
		if a != nil {
			d.drop(b, a)
		}
		switch {
		case d.ctx.Err() != nil:
			return // closing
		case errors.Is(err, codedistributor.ErrNotHeld), errors.Is(err, fs.ErrNotExist):
			// Removed since the store was listed: gone on the next pass.
		case errors.Is(err, errOtherBackend):
			rejected[b] = fp
		case errors.Is(err, codedistributor.ErrCorrupt):
			// Not again until the bundle changes: its owner re-fetches it.
			rejected[b] = fp
			d.p.Logger.Error("not seeding code that does not verify", b.logAttr(), "err", err)
			store.ReportCorrupt(id)
		default: // tried again on the next pass
			d.p.Logger.Warn("cannot seed code", b.logAttr(), "err", err)
		}
	}
	for b := range rejected {
		if b.kind == kind && !held[b.id] {
			delete(rejected, b)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for b, a := range d.torrents {
		if b.kind == kind && a.seeded != "" && !held[b.id] {
			d.dropLocked(b)
		}
	}
	for b := range d.cleaned {
		if b.kind == kind && !held[b.id] {
			// Its bundle is gone here. A topology id is never reused; a
			// blob's key is, by a create after the delete, whose upload
			// clears the mark where it is made.
			delete(d.cleaned, b)
		}
	}
}

// seed verifies the stored bundle b and seeds it from where it lies.
func (d *distributor) seed(store *codedistributor.Store, b bundle, fp string) error {
	_, meta, digest, err := store.Meta(b.id)
	if err != nil {
		return err
	}
	if meta.GetDistributor() != Name {
		return errOtherBackend
	}
	if err := store.Verify(b.id, digest); err != nil {
		return err
	}
	mi, _, err := torrentOf(meta)
	if err != nil {
		return err
	}
	s, err := spec(mi, fileStorage{dir: store.Dir(b.id), seed: true})
	if err != nil {
		return err
	}
	a, err := d.add(b, s, fp)
	if err != nil {
		return err
	}
	a.t.DisallowDataDownload() // the option in the spec is not read by v1.61.0
	// Every downloader wants what only the first seed has, and each asks
	// it for up to a thousand blocks at once: served all together, the
	// leader sends the code once per node. Serving a few at a time, the
	// rest fetch from those and from each other.
	a.t.SetMaxEstablishedConns(d.p.Config.BittorrentSeedPeers)
	d.p.Logger.Debug("seeding", b.logAttr(), "infohash", mi.HashInfoBytes().HexString())
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
