package blobstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Backoff of a version's attempts: doubles from minRetry to maxRetry.
const (
	minRetry = 500 * time.Millisecond
	maxRetry = 30 * time.Second
)

// job makes one version: fetch, verify, materialize, until it succeeds
// or is cancelled (nobody asks for it any more, or the Localizer closes).
type job struct {
	key     string
	cancel  context.CancelFunc
	lastErr error // guarded by Localizer.mu
}

// startJob starts making version id; l.mu is held.
func (l *Localizer) startJob(id, key string, meta *clusterv1.BlobMeta, uncompress bool) *job {
	ctx, cancel := context.WithCancel(l.ctx)
	j := &job{key: key, cancel: cancel}
	l.jobs[id] = j
	l.wg.Go(func() {
		defer cancel()
		l.runJob(ctx, id, j, meta, uncompress)
	})
	return j
}

func (l *Localizer) runJob(ctx context.Context, id string, j *job, meta *clusterv1.BlobMeta, uncompress bool) {
	backoff := minRetry
	began := time.Now()
	for {
		var replicas <-chan struct{} // taken first: a replica registering during the attempt counts
		if l.cfg.ReplicasChanged != nil {
			replicas = l.cfg.ReplicasChanged()
		}
		v, err := l.materialize(ctx, j.key, meta, uncompress)
		l.mu.Lock()
		if err == nil {
			if l.jobs[id] == j {
				delete(l.jobs, id)
			}
			l.versions[id] = v // on disk, wanted or not: the cache decides
			l.cache.add(id, diskSize(v.Path))
		} else {
			j.lastErr = err
		}
		l.mu.Unlock()
		if err == nil {
			l.log.Info("blob version placed", "key", j.key, "version", v.Version, "uncompress", uncompress, "path", v.Path)
			l.cfg.Ready()
			return
		}
		if ctx.Err() != nil {
			return
		}
		// A version committed a moment ago is held by no replica yet:
		// normal, until it lasts.
		level := slog.LevelWarn
		if errors.Is(err, codedistributor.ErrNotHeld) && time.Since(began) < stuckAfter {
			level = slog.LevelInfo
		}
		l.log.Log(ctx, level, "cannot place a blob version yet; retrying", "key", j.key, "version", meta.GetVersion(), "err", err, "retry_in", backoff)
		l.cfg.Ready() // its error is news
		select {
		case <-ctx.Done():
			return
		case <-replicas:
		case <-time.After(backoff):
			backoff = min(2*backoff, maxRetry)
		}
	}
}

// materialize makes the blob store hold meta's version of key, verified,
// then puts its content (or, with uncompress, what it unpacks to) in
// place, read-only, under a name no other version has.
func (l *Localizer) materialize(ctx context.Context, key string, meta *clusterv1.BlobMeta, uncompress bool) (Version, error) {
	kdir := filepath.Join(l.cfg.Dir, key)
	v := Version{Key: key, Version: meta.GetVersion(), SHA256: meta.GetContentSha256(), Uncompress: uncompress,
		Path: filepath.Join(kdir, versionName(meta.GetVersion(), meta.GetContentSha256(), uncompress))}
	if _, err := os.Lstat(v.Path); err == nil {
		// Made by a job of this version that was cancelled and asked for
		// again before it ended: a version is renamed into place whole.
		return v, nil
	}
	digest := meta.GetCodeMetaDigest()
	if err := l.cfg.Store.Verify(key, digest); err != nil {
		if err := l.cfg.Fetcher.Fetch(ctx, key, digest); err != nil {
			return Version{}, fmt.Errorf("cannot fetch version %d: %w", meta.GetVersion(), err)
		}
	}
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return Version{}, err
	}
	tmp, err := l.copyContent(key, kdir, meta.GetContentSha256())
	if err != nil {
		return Version{}, err
	}
	defer os.Remove(tmp) // a no-op once renamed
	if !uncompress {
		return v, os.Rename(tmp, v.Path)
	}
	tmpDir, err := os.MkdirTemp(kdir, ".unpack-")
	if err != nil {
		return Version{}, err
	}
	os.Remove(tmpDir) // Unpack makes it
	if err := Unpack(tmp, key, tmpDir, l.cfg.Unpack); err != nil {
		return Version{}, fmt.Errorf("uncompress version %d: %w", meta.GetVersion(), err)
	}
	if err := os.Rename(tmpDir, v.Path); err != nil {
		os.RemoveAll(tmpDir)
		return Version{}, err
	}
	return v, nil
}

// copyContent puts the store's copy of key's content into a temporary
// file in dir, a hard link where it can (a new version installed in the
// store later leaves it alone) else a copy, read-only, and checks its
// SHA-256 against want: the store may have changed between its
// verification and the link.
func (l *Localizer) copyContent(key, dir string, want []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".content-")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp)
	src := filepath.Join(l.cfg.Store.Dir(key), File)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return "", err
		}
	}
	_, sum, err := codedistributor.HashFile(tmp)
	if err == nil && !bytes.Equal(sum, want) {
		err = fmt.Errorf("%w: the store's copy of %q changed while it was placed", codedistributor.ErrCorrupt, key)
	}
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func hexDecode(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err == nil && hex.EncodeToString(b) != s {
		err = errors.New("not lower-case hex")
	}
	return b, err
}
