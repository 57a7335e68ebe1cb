package codedistributor

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/internal/notify"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Errors of the local store.
var (
	// ErrNotHeld: the store (or every source) has no copy of the code.
	ErrNotHeld = apierr.Sentinel("codedistributor: code not held", apierr.ErrNotFound)
	// ErrCorrupt: a copy's bytes do not match its meta.
	ErrCorrupt = apierr.Sentinel("codedistributor: code corrupt", apierr.ErrDataLoss)
	// ErrStoreFull and ErrStoreReadOnly say why a write to the store
	// failed (WriteError): its filesystem is full (or the writer's quota
	// spent), or mounted read-only.
	ErrStoreFull     = errors.New("codedistributor: no space left in the code store")
	ErrStoreReadOnly = errors.New("codedistributor: the code store is read-only")
)

// Store is a node's local copy of topology code: <root>/code/<topology-id>/
// holds the bundle's files and meta.pb; <root>/tmp holds bundles being
// written, which Install moves into place with a rename, so a crash never
// leaves a half-written bundle where a reader would trust it.
//
// Verification hashes every file; its result is remembered per file by
// size and modification time, so a bundle is re-hashed only after
// something touched it.
type Store struct {
	root string

	mu       sync.Mutex
	verified map[string]verifiedBundle // by topology id
	// listing is what code/ holds, as of the stamp listed: IDs reads the
	// directory again only when something else changed it.
	listing  map[string]bool
	listed   dirStamp
	tampers  uint64          // times a listing found code/ changed by something else
	reports  uint64          // counts ReportCorrupt calls
	changes  notify.Notifier // a bundle installed or removed
	reported notify.Notifier // a copy reported corrupt
}

type verifiedBundle struct {
	digest []byte
	meta   fileStamp // of meta.pb when verified; zero: not known
	files  map[string]fileStamp
}

type fileStamp struct {
	size  int64
	mtime time.Time
}

// OpenStore opens (creating if needed) the store at root and removes
// leftovers of writes a crash interrupted.
func OpenStore(root string) (*Store, error) {
	if err := os.RemoveAll(filepath.Join(root, "tmp")); err != nil {
		return nil, fmt.Errorf("codedistributor: clean %s: %w", root, err)
	}
	for _, d := range []string{"code", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("codedistributor: open store: %w", err)
		}
	}
	return &Store{root: root, verified: map[string]verifiedBundle{}}, nil
}

// Changed returns a channel closed at the next Install, or Remove of a
// bundle that was there, so a reader that looks at the store after taking
// it misses no change.
func (s *Store) Changed() <-chan struct{} { return s.changes.Changed() }

// Root is the directory the store was opened at.
func (s *Store) Root() string { return s.root }

// Dir is where a topology's bundle lives once installed. An id that is not
// a plain directory name (callers validate ids; this is the last line)
// maps to a path that never exists.
func (s *Store) Dir(id string) string {
	if !safeName(id) {
		return filepath.Join(s.root, "code", "invalid", "invalid")
	}
	return filepath.Join(s.root, "code", id)
}

// NewTemp returns a fresh directory to write a bundle into.
func (s *Store) NewTemp() (string, error) {
	return os.MkdirTemp(filepath.Join(s.root, "tmp"), "bundle-")
}

// Install moves the bundle written in tmp into place as topology id,
// replacing any earlier copy, and returns the meta's digest. The caller
// vouches that the files in tmp match meta (it hashed them as it wrote
// them); Install makes them durable before it returns.
func (s *Store) Install(tmp, id string, meta *clusterv1.CodeMeta) ([]byte, error) {
	if !safeName(id) {
		return nil, fmt.Errorf("codedistributor: unsafe topology id %q", id)
	}
	data, digest := EncodeMeta(meta)
	if err := os.WriteFile(filepath.Join(tmp, metaFile), data, 0o644); err != nil {
		return nil, err
	}
	stamps := make(map[string]fileStamp, len(meta.GetFiles()))
	for _, f := range append(meta.GetFiles(), &clusterv1.CodeFile{Name: metaFile}) {
		st, err := syncFile(filepath.Join(tmp, f.GetName()))
		if err != nil {
			return nil, fmt.Errorf("codedistributor: install %s: %w", id, err)
		}
		if f.GetName() != metaFile {
			stamps[f.GetName()] = st
		}
	}
	dst := s.Dir(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.codeStamp()
	// A directory cannot be renamed over a non-empty one: move the old
	// copy aside first, then drop it.
	var old string
	if _, err := os.Stat(dst); err == nil {
		if old, err = os.MkdirTemp(filepath.Join(s.root, "tmp"), "old-"); err != nil {
			return nil, err
		}
		if err := os.Rename(dst, filepath.Join(old, "bundle")); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return nil, fmt.Errorf("codedistributor: install %s: %w", id, err)
	}
	if _, err := syncFile(filepath.Dir(dst)); err != nil {
		return nil, err
	}
	s.noteOwnChange(id, true, before)
	if old != "" {
		os.RemoveAll(old)
	}
	s.verified[id] = verifiedBundle{digest: digest, files: stamps}
	s.changes.Notify()
	return digest, nil
}

// syncFile flushes a file (or directory) to disk and returns its stamp.
func syncFile(path string) (fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileStamp{}, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fileStamp{}, err
	}
	st, err := f.Stat()
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: st.Size(), mtime: st.ModTime()}, nil
}

// Meta returns a bundle's stored meta bytes, parsed meta and digest.
func (s *Store) Meta(id string) ([]byte, *clusterv1.CodeMeta, []byte, error) {
	data, err := os.ReadFile(filepath.Join(s.Dir(id), metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("%w: %s", ErrNotHeld, id)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	sum := sha256.Sum256(data)
	digest := sum[:]
	meta, err := DecodeMeta(data, digest)
	if err != nil {
		return nil, nil, nil, err
	}
	return data, meta, digest, nil
}

// unchanged reports whether the bundle of id was verified with digest
// want (any, if nil) and its meta and files still have the size and
// modification time they had then: Verify's fast path, a stat per file,
// with no read.
func (s *Store) unchanged(id string, want []byte) bool {
	s.mu.Lock()
	cached, ok := s.verified[id]
	s.mu.Unlock()
	if !ok || cached.meta == (fileStamp{}) || (want != nil && !bytes.Equal(cached.digest, want)) {
		return false
	}
	dir := s.Dir(id)
	if st, err := stampOf(filepath.Join(dir, metaFile)); err != nil || st != cached.meta {
		return false
	}
	for name, stamp := range cached.files {
		if st, err := stampOf(filepath.Join(dir, name)); err != nil || st != stamp {
			return false
		}
	}
	return true
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: st.Size(), mtime: st.ModTime()}, nil
}

// Verify checks that the bundle of id is complete and every file matches
// its meta, and, if want is not nil, that the meta's digest is want. It
// returns nil, or an error wrapping ErrNotHeld or ErrCorrupt.
func (s *Store) Verify(id string, want []byte) error {
	if s.unchanged(id, want) {
		return nil
	}
	metaStamp, _ := stampOf(filepath.Join(s.Dir(id), metaFile)) // before the read: a later change shows
	_, meta, digest, err := s.Meta(id)
	if err != nil {
		return err
	}
	if want != nil && !bytes.Equal(digest, want) {
		return fmt.Errorf("%w: %s holds meta %s, want %s", ErrNotHeld, id, Hex(digest), Hex(want))
	}
	dir := s.Dir(id)
	s.mu.Lock()
	cached, ok := s.verified[id]
	reports := s.reports
	s.mu.Unlock()
	stamps := make(map[string]fileStamp, len(meta.GetFiles()))
	for _, f := range meta.GetFiles() {
		path := filepath.Join(dir, f.GetName())
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, id, err)
		}
		stamp := fileStamp{size: st.Size(), mtime: st.ModTime()}
		if ok && bytes.Equal(cached.digest, digest) && cached.files[f.GetName()] == stamp {
			stamps[f.GetName()] = stamp
			continue
		}
		size, sum, err := HashFile(path)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, id, err)
		}
		if size != f.GetSize() || !bytes.Equal(sum, f.GetSha256()) {
			return fmt.Errorf("%w: %s/%s has %d bytes with SHA-256 %s, meta says %d bytes, %s",
				ErrCorrupt, id, f.GetName(), size, Hex(sum), f.GetSize(), Hex(f.GetSha256()))
		}
		stamps[f.GetName()] = stamp
	}
	s.mu.Lock()
	if s.reports == reports { // a report meanwhile may be about what this trusted
		s.verified[id] = verifiedBundle{digest: digest, meta: metaStamp, files: stamps}
	}
	s.mu.Unlock()
	return nil
}

// ReportCorrupt tells the store that a reader of the bundle of id (a peer
// being served it, a seed) found bytes that do not match its meta. The
// store forgets that it verified the bundle, so the next Verify hashes
// every file again (a Verify under way when the report comes remembers
// nothing), and wakes Reported: the store's owner (codesync on a nimbus,
// the reconcile loop on a supervisor) verifies, finds the copy corrupt,
// and fetches it again.
func (s *Store) ReportCorrupt(id string) {
	s.mu.Lock()
	delete(s.verified, id)
	s.reports++
	s.mu.Unlock()
	s.reported.Notify()
}

// Reported returns a channel closed at the next ReportCorrupt.
func (s *Store) Reported() <-chan struct{} { return s.reported.Changed() }

// Open opens one file of a bundle, by a name its meta lists.
func (s *Store) Open(id, name string) (*os.File, *clusterv1.CodeFile, error) {
	_, meta, _, err := s.Meta(id)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range meta.GetFiles() {
		if f.GetName() == name {
			file, err := os.Open(filepath.Join(s.Dir(id), name))
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %s/%s: %v", ErrCorrupt, id, name, err)
			}
			return file, f, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: %s has no file %q", ErrNotHeld, id, name)
}

// Remove deletes a bundle; removing one that is not there is not an error.
func (s *Store) Remove(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.verified, id)
	before := s.codeStamp()
	dir := s.Dir(id)
	if _, err := os.Lstat(dir); err != nil {
		return nil // nothing there: nothing changed
	}
	if err := os.RemoveAll(dir); err != nil {
		return err // still there: nothing to announce
	}
	s.noteOwnChange(id, false, before)
	s.changes.Notify()
	return nil
}

// Has reports whether the store has a directory for id (verified or not).
func (s *Store) Has(id string) bool {
	_, err := os.Lstat(s.Dir(id))
	return err == nil
}

// codeStamp is code/'s stamp now (zero if it cannot be read).
func (s *Store) codeStamp() dirStamp {
	st, err := os.Stat(filepath.Join(s.root, "code"))
	if err != nil {
		return dirStamp{}
	}
	return stampDir(st)
}

// noteOwnChange keeps the listing in step with the store's own change of
// code/ (id installed or removed; before is the directory's stamp just
// before it); s.mu is held. A listing something else made stale before,
// or one the change leaves no different stamp for, is dropped: IDs reads
// the directory next time.
func (s *Store) noteOwnChange(id string, present bool, before dirStamp) {
	after := s.codeStamp()
	if s.listing == nil || before != s.listed || after == before || after == (dirStamp{}) {
		s.listing = nil
		return
	}
	if present {
		s.listing[id] = true
	} else {
		delete(s.listing, id)
	}
	s.listed = after
}

// dirStamp tells whether a directory changed: its modification time, and
// its link count, which counts its subdirectories (on ext4, xfs, tmpfs):
// a removal within the same tick of a coarse clock still shows.
type dirStamp struct {
	mtime time.Time
	links uint64
}

func stampDir(fi os.FileInfo) dirStamp {
	d := dirStamp{mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		d.links = uint64(st.Nlink)
	}
	return d
}

// IDs lists the topologies with a bundle in the store (verified or not),
// as a set of the caller's own. The listing is kept, and code/ read again
// only when its stamp shows that something other than the store changed
// it (a disk wiped behind the node's back): a call costs a stat, not a
// read of thousands of entries.
func (s *Store) IDs() (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.relist(); err != nil {
		return nil, err
	}
	return maps.Clone(s.listing), nil
}

// Tampers counts the times something other than the store was found to
// have changed code/ (a disk wiped behind the node's back), whoever
// listed it: an owner that sees the count move looks at every bundle
// again. It costs a stat.
func (s *Store) Tampers() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.relist()
	return s.tampers, err
}

// relist reads code/ again if its stamp changed since the listing; s.mu
// is held.
func (s *Store) relist() error {
	dir := filepath.Join(s.root, "code")
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if s.listing != nil && stampDir(st) == s.listed {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	listing := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			listing[e.Name()] = true
		}
	}
	s.tampers++                                 // a first listing counts too: nothing was known before it
	s.listing, s.listed = listing, stampDir(st) // the stamp from before the read: a change during it shows next time
	return nil
}

// WriteError says why a write to the store failed: err wrapped with
// ErrStoreFull when the filesystem has no space left (ENOSPC) or the
// writer's quota is spent (EDQUOT), with ErrStoreReadOnly when it is
// mounted read-only (EROFS), and err as it is otherwise.
func (s *Store) WriteError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w (%s): %w", ErrStoreFull, s.root, err)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w (%s): %w", ErrStoreReadOnly, s.root, err)
	}
	return err
}

// Free returns the bytes an unprivileged writer may still write to the
// store's filesystem: an error wrapping ErrStoreReadOnly if it is mounted
// read-only.
func (s *Store) Free() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.root, &st); err != nil {
		return 0, fmt.Errorf("codedistributor: free space of %s: %w", s.root, err)
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return 0, fmt.Errorf("%w (%s): mounted read-only", ErrStoreReadOnly, s.root)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil // Bsize is int64 on Linux, not everywhere
}

// probeBytes is what Probe writes: enough to need a data block, little
// enough to cost nothing.
const probeBytes = 64 << 10

// Probe writes a small file into the store's temp directory, flushes it to
// disk and removes it: it reports whether the store can be written now,
// with the error classified as by WriteError.
func (s *Store) Probe() error {
	f, err := os.CreateTemp(filepath.Join(s.root, "tmp"), "probe-")
	if err != nil {
		return s.WriteError(err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return s.WriteError(err)
}
