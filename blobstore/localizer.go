package blobstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// ErrNoBlob is a blob a topology names that /blobstore does not have.
var ErrNoBlob = errors.New("blobstore: no such blob")

// Version is one version of a blob, materialized on a supervisor's disk,
// immutable: the content as a read-only file, or with Uncompress the
// directory it unpacked to.
type Version struct {
	Key        string
	Version    int64
	SHA256     []byte // of the content, as stored
	Uncompress bool
	Path       string // absolute
}

// ID names the version in the cache: key, version, content and form.
func (v Version) ID() string { return versionID(v.Key, v.Version, v.SHA256, v.Uncompress) }

func versionID(key string, version int64, sha []byte, uncompress bool) string {
	return key + "/" + versionName(version, sha, uncompress)
}

// versionName is a version's entry in its key's directory:
// <version>-<first 16 hex of the SHA-256>.blob, or .d unpacked.
func versionName(version int64, sha []byte, uncompress bool) string {
	suffix := ".blob"
	if uncompress {
		suffix = ".d"
	}
	return strconv.FormatInt(version, 10) + "-" + codedistributor.Hex(sha[:min(8, len(sha))]) + suffix
}

// NotReadyError says why a blob a worker needs is not placed yet.
type NotReadyError struct {
	Key string
	Err error // the last attempt's error; nil while the first is under way
}

func (e *NotReadyError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("blob %q: being fetched", e.Key)
	}
	return fmt.Sprintf("blob %q: %v", e.Key, e.Err)
}

func (e *NotReadyError) Unwrap() error { return e.Err }

// LocalizerConfig is what a Localizer works with.
type LocalizerConfig struct {
	// Dir holds the materialized versions: <Dir>/<key>/<version>-<sha>.blob
	// or .d. It is the Localizer's alone.
	Dir string
	// Store is the supervisor's blob store: the current version of each
	// blob it uses, verified (what its CodeService serves for recovery).
	Store *codedistributor.Store
	// Fetcher fills Store (Kind codedistributor.KindBlob).
	Fetcher *codedistributor.Fetcher
	// Metas is the /blobstore cache: each blob's current BlobMeta.
	Metas *cluster.DirCache[*clusterv1.BlobMeta]
	// ReplicasChanged, if set, gives a channel closed at the next change
	// of any blob's replicas (cluster.BlobCache.Changed): a fetch that
	// found no replica holding a version retries then, not at its backoff.
	ReplicasChanged func() <-chan struct{}
	// CacheTargetBytes caps the versions no worker uses
	// (supervisor.localizer.cache.target.size.mb).
	CacheTargetBytes int64
	// Unpack bounds one archive; MaxBytes defaults to CacheTargetBytes
	// (at least 1 GiB), MaxEntries to DefaultMaxEntries.
	Unpack UnpackLimits
	// Ready is called when a version was materialized, or an attempt
	// failed: the caller asks again.
	Ready  func()
	Logger *slog.Logger
}

// Localizer keeps, on a supervisor, the blob versions its workers use:
// Prepare fetches (with backoff, in the background) and materializes the
// current version of each blob a worker names; Collect keeps the cache
// within its target. Prepare and Collect are the reconcile loop's; the
// rest is safe for concurrent use. New starts nothing; Close stops the
// fetches and waits for them.
type Localizer struct {
	cfg    LocalizerConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	versions map[string]Version // materialized, by ID
	cache    *versionCache
	jobs     map[string]*job // by the ID of the version being made
	asked    map[string]bool // IDs Prepare was asked for since the last Collect
}

// NewLocalizer opens the versions directory and takes up the versions a
// previous supervisor left there, oldest first; a partial one is removed.
func NewLocalizer(cfg LocalizerConfig) (*Localizer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Ready == nil {
		cfg.Ready = func() {}
	}
	if cfg.Unpack.MaxBytes <= 0 {
		cfg.Unpack.MaxBytes = max(cfg.CacheTargetBytes, 1<<30)
	}
	if cfg.Unpack.MaxEntries <= 0 {
		cfg.Unpack.MaxEntries = DefaultMaxEntries
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("blobstore: localizer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Localizer{
		cfg: cfg, log: cfg.Logger.With("component", "localizer"), ctx: ctx, cancel: cancel,
		versions: map[string]Version{}, cache: newVersionCache(cfg.CacheTargetBytes),
		jobs: map[string]*job{}, asked: map[string]bool{},
	}
	if err := l.scan(); err != nil {
		cancel()
		return nil, err
	}
	return l, nil
}

// Close stops every fetch and waits for them.
func (l *Localizer) Close() {
	l.cancel()
	l.wg.Wait()
}

// Prepare returns the current version of each blob in uses (by key),
// materialized as the use asks. When one is not ready it starts what is
// missing in the background (fetch, verify, materialize; retried with
// backoff; Ready called at each end) and returns a *NotReadyError naming
// the first such key, with the last attempt's error; a key /blobstore
// does not have is ErrNoBlob.
func (l *Localizer) Prepare(uses map[string]validate.BlobUse) (map[string]Version, error) {
	metas := l.cfg.Metas.Snapshot()
	out := make(map[string]Version, len(uses))
	var notReady error
	for _, key := range slices.Sorted(maps.Keys(uses)) {
		v, err := l.prepare(key, metas[key], uses[key].Uncompress)
		if err != nil {
			if notReady == nil {
				notReady = err
			}
			continue
		}
		out[key] = v
	}
	return out, notReady
}

func (l *Localizer) prepare(key string, meta *clusterv1.BlobMeta, uncompress bool) (Version, error) {
	if meta == nil || len(meta.GetContentSha256()) == 0 {
		return Version{}, &NotReadyError{Key: key, Err: fmt.Errorf("%w (topology.blobstore.map names it)", ErrNoBlob)}
	}
	id := versionID(key, meta.GetVersion(), meta.GetContentSha256(), uncompress)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked[id] = true
	if v, ok := l.versions[id]; ok {
		if len(v.SHA256) < len(meta.GetContentSha256()) { // found on disk, named by a prefix
			v.SHA256 = meta.GetContentSha256()
			l.versions[id] = v
		}
		return v, nil
	}
	j := l.jobs[id]
	if j == nil {
		j = l.startJob(id, key, meta, uncompress)
	}
	return Version{}, &NotReadyError{Key: key, Err: j.lastErr}
}

// Collect keeps the cache within its target: the versions in use are
// those linked (by ID) and those Prepare was asked for since the last
// Collect; fetches of versions nobody asked for stop, and the versions
// not in use are removed, least recently used first, while they take more
// than the target. A blob none of whose versions is kept leaves the blob
// store too.
func (l *Localizer) Collect(linked map[string]bool) {
	l.mu.Lock()
	inUse := maps.Clone(l.asked)
	maps.Copy(inUse, linked)
	clear(l.asked)
	for id, j := range l.jobs {
		if !inUse[id] {
			j.cancel()
			delete(l.jobs, id)
		}
	}
	l.cache.setInUse(inUse)
	evicted := l.cache.evict()
	var gone []Version
	for _, id := range evicted {
		gone = append(gone, l.versions[id])
		delete(l.versions, id)
	}
	keep := map[string]bool{}
	for _, v := range l.versions {
		keep[v.Key] = true
	}
	for _, j := range l.jobs {
		keep[j.key] = true
	}
	l.mu.Unlock()
	for _, v := range gone {
		if err := removeVersion(v.Path); err != nil {
			l.log.Warn("cannot remove an evicted blob version", "key", v.Key, "version", v.Version, "err", err)
			continue
		}
		l.log.Info("evicted an unused blob version", "key", v.Key, "version", v.Version)
	}
	ids, err := l.cfg.Store.IDs()
	if err != nil {
		return
	}
	for key := range ids {
		if !keep[key] {
			_ = l.cfg.Store.Remove(key)
		}
	}
}

// removeVersion removes a version's file or directory.
func removeVersion(path string) error {
	err := os.RemoveAll(path)
	if err == nil {
		_ = os.Remove(filepath.Dir(path)) // its key's directory, if empty now
	}
	return err
}

// scan takes up the versions in Dir, oldest first by modification time,
// and removes what a crash left half made.
func (l *Localizer) scan() error {
	keys, err := os.ReadDir(l.cfg.Dir)
	if err != nil {
		return fmt.Errorf("blobstore: localizer: %w", err)
	}
	type found struct {
		v     Version
		size  int64
		mtime int64
	}
	var all []found
	for _, k := range keys {
		kdir := filepath.Join(l.cfg.Dir, k.Name())
		if !k.IsDir() || validate.BlobKey("key", k.Name()) != nil {
			_ = os.RemoveAll(kdir)
			continue
		}
		entries, err := os.ReadDir(kdir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(kdir, e.Name())
			v, ok := parseVersionName(k.Name(), e.Name())
			if !ok {
				_ = removeVersion(p) // a temporary file or directory
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			v.Path = p
			all = append(all, found{v: v, size: diskSize(p), mtime: info.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b found) int { return int(min(max(a.mtime-b.mtime, -1), 1)) })
	for _, f := range all {
		l.versions[f.v.ID()] = f.v
		l.cache.add(f.v.ID(), f.size)
	}
	return nil
}

// parseVersionName reads <version>-<16 hex>.blob or .d. The SHA-256 is
// known by its prefix only until the version is used again, when the
// full one comes from its BlobMeta (a version is named by its prefix).
func parseVersionName(key, name string) (Version, bool) {
	uncompress := false
	base, ok := strings.CutSuffix(name, ".blob")
	if !ok {
		if base, ok = strings.CutSuffix(name, ".d"); !ok {
			return Version{}, false
		}
		uncompress = true
	}
	num, prefix, ok := strings.Cut(base, "-")
	if !ok || len(prefix) != 16 {
		return Version{}, false
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 1 || strconv.FormatInt(v, 10) != num {
		return Version{}, false
	}
	sha, err := hexDecode(prefix)
	if err != nil {
		return Version{}, false
	}
	return Version{Key: key, Version: v, SHA256: sha, Uncompress: uncompress}, true
}

// diskSize is what a version takes: its file's size, or its directory's
// files' sizes together.
func diskSize(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
