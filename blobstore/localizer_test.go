package blobstore_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	_ "github.com/nimbusha/nimbus/codedistributor/localfs" // the backend the nodes use
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

// localizerEnv is a real ZooKeeper, a nimbus-like node serving the blobs
// it publishes, and a supervisor-like node whose Localizer places them.
type localizerEnv struct {
	env    *conformance.Env
	nimbus *conformance.Node
	sup    *conformance.Node
	metas  *cluster.DirCache[*clusterv1.BlobMeta]
	dir    string
}

func newLocalizerEnv(t *testing.T) *localizerEnv {
	env := conformance.NewEnv(t, "localfs", nil)
	e := &localizerEnv{env: env, nimbus: env.Node(), sup: env.Node(), dir: filepath.Join(t.TempDir(), "versions")}
	e.metas = cluster.NewDirCache(env.Session, env.Session.Paths().BlobStore(), func() *clusterv1.BlobMeta { return new(clusterv1.BlobMeta) },
		slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); _ = e.metas.Run(t.Context()) }()
	t.Cleanup(func() { <-done })
	<-e.metas.Loaded()
	return e
}

func (e *localizerEnv) localizer(t *testing.T, target int64) *blobstore.Localizer {
	l, err := blobstore.NewLocalizer(blobstore.LocalizerConfig{
		Dir: e.dir, Store: e.sup.Blobs, Fetcher: e.sup.BlobFetcher, Metas: e.metas, CacheTargetBytes: target,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// publish makes data blob key's next version, and waits until the
// supervisor's cache of /blobstore shows it.
func (e *localizerEnv) publish(t *testing.T, key string, data []byte) {
	e.env.PublishBlob(e.nimbus, key, data)
	want, _, err := e.env.Session.Read().Blob(key)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the cache at the new version of "+key, func() error {
		if got := e.metas.Snapshot()[key]; got.GetVersion() != want.GetVersion() {
			return errors.New("not yet")
		}
		return nil
	})
}

// prepared waits until l has every blob of uses placed.
func prepared(t *testing.T, l *blobstore.Localizer, uses map[string]validate.BlobUse) map[string]blobstore.Version {
	t.Helper()
	var got map[string]blobstore.Version
	testcluster.WaitFor(t, 20*time.Second, "the blobs placed", func() error {
		var err error
		got, err = l.Prepare(uses)
		return err
	})
	return got
}

func oneFileTarGz(t *testing.T, name, content string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// TestLocalizerPlacesUpdatesAndEvicts: a blob that does not exist is
// named in the error; blobs are fetched from the nimbus, verified and
// materialized (an archive unpacked); an update is a new version beside
// the old; a restarted Localizer takes up the versions on disk; what is
// neither linked nor asked for is evicted beyond the target, and leaves
// the blob store.
func TestLocalizerPlacesUpdatesAndEvicts(t *testing.T) {
	e := newLocalizerEnv(t)
	l := e.localizer(t, 0)

	_, err := l.Prepare(map[string]validate.BlobUse{"nothing-here": {LocalName: "x"}})
	var notReady *blobstore.NotReadyError
	if !errors.As(err, &notReady) || notReady.Key != "nothing-here" || !errors.Is(err, blobstore.ErrNoBlob) ||
		!strings.Contains(err.Error(), `blob "nothing-here"`) {
		t.Fatalf("a blob that does not exist: %v", err)
	}

	e.publish(t, "words", []byte("first"))
	e.publish(t, "dict.tgz", oneFileTarGz(t, "data.txt", "a dictionary"))
	uses := map[string]validate.BlobUse{"words": {LocalName: "words.txt"}, "dict.tgz": {LocalName: "dict", Uncompress: true}}
	if _, err := l.Prepare(uses); err == nil {
		t.Fatal("ready before anything was fetched")
	}
	v1 := prepared(t, l, uses)
	if b, err := os.ReadFile(v1["words"].Path); err != nil || string(b) != "first" || v1["words"].Version != 1 {
		t.Fatalf("words: %q %v, version %d", b, err, v1["words"].Version)
	}
	if fi, _ := os.Stat(v1["words"].Path); fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("a placed version is writable: %v", fi.Mode())
	}
	if b, err := os.ReadFile(filepath.Join(v1["dict.tgz"].Path, "data.txt")); err != nil || string(b) != "a dictionary" {
		t.Fatalf("dict unpacked: %q %v", b, err)
	}
	if len(v1["words"].SHA256) != 32 {
		t.Fatalf("the version's SHA-256 is %d bytes", len(v1["words"].SHA256))
	}

	e.publish(t, "words", []byte("second"))
	v2 := prepared(t, l, uses)
	if v2["words"].Version != 2 || v2["words"].Path == v1["words"].Path {
		t.Fatalf("after the update: %+v", v2["words"])
	}
	if b, _ := os.ReadFile(v1["words"].Path); string(b) != "first" {
		t.Fatalf("the old version changed under its readers: %q", b)
	}

	// A supervisor restarted: the versions on disk are taken up, placed
	// without a fetch.
	l.Close()
	l = e.localizer(t, 0)
	if again, err := l.Prepare(uses); err != nil || again["words"].Path != v2["words"].Path || len(again["words"].SHA256) != 32 {
		t.Fatalf("after a restart: %+v, %v", again, err)
	}

	// Linked: v1 (a worker not yet switched); asked: v2 and dict. Target 0:
	// nothing else is kept, nothing in use goes.
	l.Collect(map[string]bool{v1["words"].ID(): true})
	for _, p := range []string{v1["words"].Path, v2["words"].Path, v2["dict.tgz"].Path} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a version in use was removed: %v", err)
		}
	}
	l.Collect(map[string]bool{v2["words"].ID(): true}) // v1 unlinked, dict no longer asked for
	if _, err := os.Stat(v1["words"].Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unused version stayed over the target: %v", err)
	}
	if _, err := os.Stat(v2["dict.tgz"].Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unused archive stayed over the target: %v", err)
	}
	if e.sup.Blobs.Has("dict.tgz") || !e.sup.Blobs.Has("words") {
		t.Fatalf("the blob store holds dict %v (want gone), words %v (want kept)", e.sup.Blobs.Has("dict.tgz"), e.sup.Blobs.Has("words"))
	}
}

// TestLocalizerKeepsUnusedVersionsWithinTarget: with room, unused versions
// stay for a later use.
func TestLocalizerKeepsUnusedVersionsWithinTarget(t *testing.T) {
	e := newLocalizerEnv(t)
	l := e.localizer(t, 1<<20)
	e.publish(t, "model", []byte("weights"))
	v := prepared(t, l, map[string]validate.BlobUse{"model": {LocalName: "model"}})
	l.Collect(nil)
	l.Collect(nil)
	if _, err := os.Stat(v["model"].Path); err != nil {
		t.Fatalf("an unused version within the target was removed: %v", err)
	}
}
