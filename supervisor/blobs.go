package supervisor

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
	"github.com/nimbusha/nimbus/workerproto"
)

// Blobs on a supervisor (docs/ARCHITECTURE.md section 7): the Localizer
// (package blobstore) keeps the versions the workers' topologies name in
// topology.blobstore.map; the reconcile loop starts a worker only once
// every blob it names is placed, switches the links of running workers
// when a blob changes, then tells them (the blobs file and SIGUSR1) or,
// with workerRestart, restarts them. A worker's links and blobs file are
// in its directory (protocol.go), made at each start from placed.

// blobUses reads a topology conf's topology.blobstore.map (checked at
// submit: each local name one the worker protocol leaves free).
func blobUses(conf map[string]string) (map[string]validate.BlobUse, error) {
	v, ok := conf[validate.TopologyBlobstoreMap]
	if !ok || v == "" {
		return nil, nil
	}
	return validate.ParseBlobstoreMap(validate.TopologyBlobstoreMap, v)
}

// blobsReady reports whether every blob the worker of spec names is
// placed, and the versions to link; while one is not, the slot waits with
// the reason as its last error in the heartbeat (waiting).
func (s *Supervisor) blobsReady(port int32, spec workerSpec, waiting map[int32]*clusterv1.WorkerState) (map[string]blobstore.Version, bool) {
	if len(spec.Blobs) == 0 {
		return nil, true
	}
	versions, err := s.localizer.Prepare(spec.Blobs)
	if err == nil {
		return versions, true
	}
	s.mu.Lock()
	prev := s.blobWaits[port]
	s.mu.Unlock()
	msg := capError(err)
	at := time.Now().UnixMilli()
	if prev.GetLastError() == msg && prev.GetTopologyId() == spec.TopologyID {
		at = prev.GetLastErrorUnixMs() // the same reason: since then
	} else {
		s.log.Warn("worker waits for its blobs", "topology", spec.TopologyID, "port", port, "err", err)
	}
	waiting[port] = &clusterv1.WorkerState{TopologyId: spec.TopologyID, Port: port, State: "starting", LastError: msg, LastErrorUnixMs: at}
	return nil, false
}

// waitingStates are the heartbeat's states of the slots that wait for
// their blobs.
func (s *Supervisor) waitingStates() []*clusterv1.WorkerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*clusterv1.WorkerState, 0, len(s.blobWaits))
	for _, port := range slices.Sorted(maps.Keys(s.blobWaits)) {
		if s.workers[port] == nil {
			out = append(out, s.blobWaits[port])
		}
	}
	return out
}

// applyBlobs brings every running worker's blobs to their current
// versions, then lets the Localizer keep its cache: what any worker links
// is in use.
func (s *Supervisor) applyBlobs() {
	s.mu.Lock()
	ws := make([]*worker, 0, len(s.workers))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	linked := map[string]bool{}
	for w := range s.stopping { // their links stay until their stop returns
		for _, v := range w.placedBlobs() {
			linked[v.ID()] = true
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		if len(w.spec.Blobs) == 0 {
			continue
		}
		// What a worker is switched away from stays until the next pass:
		// it was told a moment ago and may still be reading the old one.
		for _, v := range w.placedBlobs() {
			linked[v.ID()] = true
		}
		current, _ := s.localizer.Prepare(w.spec.Blobs) // those not ready yet come in a later pass
		w.updateBlobs(current)
		for _, v := range w.placedBlobs() {
			linked[v.ID()] = true
		}
	}
	s.localizer.Collect(linked)
}

// placedBlobs is a copy of what the worker's links point at.
func (w *worker) placedBlobs() map[string]blobstore.Version {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	return maps.Clone(w.blobs)
}

// updateBlobs switches the links of the blobs whose version in current
// differs from the one placed, then rewrites the blobs file and signals
// the worker, or restarts it if one of them has workerRestart.
func (w *worker) updateBlobs(current map[string]blobstore.Version) {
	w.statusMu.Lock()
	var changed []string
	restart := false
	for _, key := range slices.Sorted(maps.Keys(current)) {
		if old, ok := w.blobs[key]; ok && old.ID() == current[key].ID() {
			continue
		}
		if w.prepared {
			if err := blobstore.Link(w.spec.Dir, w.spec.Blobs[key].LocalName, current[key].Path); err != nil {
				w.log.Error("cannot switch a blob to its new version", "key", key, "err", err)
				continue
			}
		}
		w.blobs[key] = current[key]
		changed = append(changed, key)
		restart = restart || w.spec.Blobs[key].WorkerRestart
	}
	var err error
	if len(changed) > 0 && w.prepared {
		err = writeBlobsFile(w.spec.Dir, w.spec.Blobs, w.blobs, w.owner)
	}
	prepared := w.prepared
	w.statusMu.Unlock()
	if len(changed) == 0 || !prepared {
		return // the next start links them
	}
	if err != nil {
		w.log.Error("cannot write the worker's blobs file", "err", err)
	}
	if restart {
		w.log.Info("blob updated: restarting the worker (workerRestart)", "keys", changed)
		select {
		case w.restarts.asked <- fmt.Sprintf("restarted for the new version of blob %q (workerRestart)", changed[0]):
		default: // a restart is pending already
		}
		return
	}
	pid, signalled := w.tell()
	w.log.Info("blob updated: the worker is told", "keys", changed, "pid", pid, "signalled", signalled)
}

// placeBlobs links the worker's blobs into its directory and writes its
// blobs file, before a start (command).
func (w *worker) placeBlobs(as *account) error {
	if len(w.spec.Blobs) == 0 {
		return nil
	}
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	for key, use := range w.spec.Blobs {
		v, ok := w.blobs[key]
		if !ok {
			return fmt.Errorf("blob %q is not placed", key)
		}
		if err := blobstore.Link(w.spec.Dir, use.LocalName, v.Path); err != nil {
			return fmt.Errorf("blob %q: %w", key, err)
		}
	}
	return writeBlobsFile(w.spec.Dir, w.spec.Blobs, w.blobs, as)
}

// writeBlobsFile replaces dir's blobs file atomically with what placed
// holds.
func writeBlobsFile(dir string, uses map[string]validate.BlobUse, placed map[string]blobstore.Version, as *account) error {
	var bs workerproto.Blobs
	for key, use := range uses {
		if v, ok := placed[key]; ok {
			bs = append(bs, workerproto.Blob{LocalName: use.LocalName, Version: v.Version, SHA256: v.SHA256})
		}
	}
	b, err := workerproto.EncodeBlobs(bs)
	if err != nil {
		return err
	}
	return workerproto.ReplaceFile(filepath.Join(dir, workerproto.BlobsFileName), b, readableBy(as))
}

// adoptedBlobs is what an adopted worker's links point at: its blobs
// file's versions and its links' targets. A blob it cannot tell is left
// out: the reconcile loop places its current version.
func adoptedBlobs(spec workerSpec) map[string]blobstore.Version {
	out := map[string]blobstore.Version{}
	if len(spec.Blobs) == 0 {
		return out
	}
	listed, err := workerproto.ReadBlobs(filepath.Join(spec.Dir, workerproto.BlobsFileName))
	if err != nil {
		return out
	}
	for key, use := range spec.Blobs {
		b, ok := listed.Find(use.LocalName)
		target, err := os.Readlink(filepath.Join(spec.Dir, use.LocalName))
		if !ok || err != nil {
			continue
		}
		v := blobstore.Version{Key: key, Version: b.Version, SHA256: b.SHA256, Uncompress: use.Uncompress, Path: target}
		if filepath.Join(filepath.Base(filepath.Dir(target)), filepath.Base(target)) != v.ID() {
			continue // the link and the file disagree
		}
		out[key] = v
	}
	return out
}

// openLocalizer builds the Localizer on the blob store, with its own
// Fetcher of blobs through the node's one distributor.
func (s *Supervisor) openLocalizer(params codedistributor.Params) (err error) {
	// The replicas too, not only the metas: a new version is committed a
	// moment before the leader registers as holding it, and a fetch that
	// found no replica retries when one registers, not at its backoff.
	s.blobs = cluster.NewBlobCache(s.sess, s.base)
	s.blobMetas = s.blobs.Distributions
	s.localizer, err = blobstore.NewLocalizer(blobstore.LocalizerConfig{
		Dir: filepath.Join(s.dir, "blob-versions"), Store: s.blobStore,
		Fetcher:          &codedistributor.Fetcher{Params: params, Dist: s.dist, Store: s.blobStore, Kind: codedistributor.KindBlob},
		Metas:            s.blobMetas,
		ReplicasChanged:  s.blobs.Changed,
		CacheTargetBytes: s.cfg.LocalizerCacheTargetMB << 20,
		Ready:            s.nudge, Logger: s.base,
	})
	if err != nil {
		return err
	}
	s.lc.OnClose(s.localizer.Close)
	return nil
}
