package worker

import (
	"bytes"
	"slices"

	"github.com/nimbusha/nimbus/workerproto"
)

// BlobUpdate is what a worker learns when its blobs change: every blob
// placed now, and the local names of those that are new or at a new
// version since the last update it was given.
type BlobUpdate struct {
	Blobs   workerproto.Blobs
	Changed []string
}

// Blobs are the blobs placed in the worker's directory now (its
// topology's topology.blobstore.map), as the blobs file last read said.
func (w *Worker) Blobs() workerproto.Blobs {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.blobs)
}

// BlobPath is where the blob placed as localName is: a symbolic link in
// the worker's directory to its current version, a file (or, unpacked,
// a directory). Open it again after an update to read the new version; a
// file open already stays the old one. "" without a blobs file.
func (w *Worker) BlobPath(localName string) string {
	if w.proto.BlobsFile == "" {
		return ""
	}
	return workerproto.Blob{LocalName: localName}.Path(w.proto.BlobsFile)
}

// BlobUpdates delivers each change of the worker's blobs, the blobs it
// starts with included (when it has any); a reader that falls behind
// gets the latest blobs with every name changed since it last read. It is
// never closed.
func (w *Worker) BlobUpdates() <-chan BlobUpdate { return w.blobUpdates }

// followBlobs takes up what the blobs file says now; a file it cannot
// read is logged and the last blobs stand.
func (w *Worker) followBlobs() {
	if w.proto.BlobsFile == "" {
		return
	}
	bs, err := w.proto.Blobs()
	if err != nil {
		w.log.Warn("cannot read the blobs file; the last blobs stand", "err", err)
		return
	}
	w.mu.Lock()
	changed := changedBlobs(w.blobs, bs)
	if len(changed) == 0 {
		w.mu.Unlock()
		return
	}
	w.blobs = bs
	select { // keep only the latest, with what the dropped one changed
	case prev := <-w.blobUpdates:
		for _, name := range prev.Changed {
			if !slices.Contains(changed, name) {
				changed = append(changed, name)
			}
		}
		slices.Sort(changed)
	default:
	}
	u := BlobUpdate{Blobs: slices.Clone(bs), Changed: changed}
	w.blobUpdates <- u
	w.mu.Unlock()
	if w.cfg.OnBlobUpdate != nil {
		w.cfg.OnBlobUpdate(u)
	}
}

// changedBlobs are the local names in now that old lacks or holds at
// another version or content.
func changedBlobs(old, now workerproto.Blobs) []string {
	var out []string
	for _, b := range now {
		o, ok := old.Find(b.LocalName)
		if !ok || o.Version != b.Version || !bytes.Equal(o.SHA256, b.SHA256) {
			out = append(out, b.LocalName)
		}
	}
	return out
}
