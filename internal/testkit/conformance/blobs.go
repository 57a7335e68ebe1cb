package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/codedistributor"
)

// Scenarios of blobs: versions of one file ("blob"), uploaded, fetched
// and cleaned up through the same backend as code, and kept apart from
// code everywhere (stores, replicas, the backend's own storage).

// oldVersionWait bounds the attempt to download a version no node offers
// any more: a backend whose peers wait for one (bittorrent) would wait for
// a minute.
const oldVersionWait = 3 * time.Second

// blobUploadThenFetchOnAnotherNode proves a blob published on one node
// arrives whole in another node's blob store, and only there.
func blobUploadThenFetchOnAnotherNode(t *testing.T, e *Env) {
	a, b := e.Node(), e.Node()
	data := e.RandomBlob(2<<20 + 5) // several chunks and pieces
	blob := e.PublishBlob(a, "dictionary.txt", data)
	if err := b.BlobFetcher.Fetch(t.Context(), blob.TopologyID, blob.Digest); err != nil {
		t.Fatal(err)
	}
	e.expectBlob(b, blob, data)
	if b.Store.Has(blob.TopologyID) {
		t.Fatalf("%s: the blob was installed in the code store", b.Addr)
	}
}

// blobNewVersionReplacesTheOld proves a second version, uploaded while the
// first is held, replaces it on a node that fetches it, and that the first
// is no longer offered.
func blobNewVersionReplacesTheOld(t *testing.T, e *Env) {
	a, b, c := e.Node(), e.Node(), e.Node()
	key := "model v1.bin" // Storm's keys may hold spaces
	first := e.RandomBlob(300 << 10)
	v1 := e.PublishBlob(a, key, first)
	if err := b.BlobFetcher.Fetch(t.Context(), key, v1.Digest); err != nil {
		t.Fatal(err)
	}
	second := e.RandomBlob(500<<10 + 3)
	v2 := e.PublishBlob(a, key, second)
	if bytes.Equal(v1.Digest, v2.Digest) {
		t.Fatal("two contents gave one digest")
	}
	e.expectBlob(a, v2, second)
	if err := b.BlobFetcher.Fetch(t.Context(), key, v2.Digest); err != nil {
		t.Fatal(err)
	}
	e.expectBlob(b, v2, second)
	if err := c.BlobFetcher.Fetch(t.Context(), key, v1.Digest); !errors.Is(err, codedistributor.ErrNotHeld) {
		t.Fatalf("fetch of the replaced version: %v, want ErrNotHeld", err)
	}
	if c.Blobs.Has(key) {
		t.Fatalf("%s installed the replaced version", c.Addr)
	}
}

// blobApartFromCode proves a blob whose key is a topology's id never
// mixes with that topology's code: a node fetches both, each verified,
// and cleaning up either leaves the other whole where the backend keeps
// it (a node that holds neither fetches it afterwards).
func blobApartFromCode(t *testing.T, e *Env) {
	a, c := e.Node(), e.Node()
	for i, cleaned := range []string{"code", "blob"} {
		id := fmt.Sprintf("shared-%d-1", i+1)
		code, codeData := e.Publish(a, id, 400<<10)
		blobData := e.RandomBlob(300 << 10)
		blob := e.PublishBlob(a, id, blobData)
		if err := c.Fetcher.Fetch(t.Context(), id, code.Digest); err != nil {
			t.Fatalf("fetch the code of %s: %v", id, err)
		}
		if err := c.BlobFetcher.Fetch(t.Context(), id, blob.Digest); err != nil {
			t.Fatalf("fetch blob %s: %v", id, err)
		}
		e.expectHolds(c, code, codeData)
		e.expectBlob(c, blob, blobData)

		fresh := e.Node()
		switch cleaned {
		case "code":
			if err := a.Dist.Cleanup(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			if err := fresh.BlobFetcher.Fetch(t.Context(), id, blob.Digest); err != nil {
				t.Fatalf("fetch blob %s after its namesake topology's cleanup: %v", id, err)
			}
			e.expectBlob(fresh, blob, blobData)
		case "blob":
			if err := a.Dist.CleanupBlob(t.Context(), id, nil); err != nil {
				t.Fatal(err)
			}
			if err := fresh.Fetcher.Fetch(t.Context(), id, code.Digest); err != nil {
				t.Fatalf("fetch the code of %s after the cleanup of its namesake blob: %v", id, err)
			}
			e.expectHolds(fresh, code, codeData)
		}
	}
}

// cleanupBlobKeepsOnlyTheCurrentVersion proves CleanupBlob with the
// current version's meta leaves nothing of older versions where the
// backend stores blobs, keeps the current one fetchable, and, on delete,
// removes everything (twice is fine).
func cleanupBlobKeepsOnlyTheCurrentVersion(t *testing.T, e *Env) {
	a, b := e.Node(), e.Node()
	key := "lookup"
	v1 := e.PublishBlob(a, key, e.RandomBlob(200<<10))
	second := e.RandomBlob(250 << 10)
	v2 := e.PublishBlob(a, key, second)
	if err := a.Dist.CleanupBlob(t.Context(), key, v2.Meta); err != nil {
		t.Fatal(err)
	}
	current := codedistributor.Hex(v2.Meta.GetFiles()[0].GetSha256())
	if versions, listed := e.storedBlobs(a)[key]; listed && slices.ContainsFunc(versions, func(v string) bool { return v != current }) {
		t.Fatalf("versions of %s stored after the cleanup: %v, want only %s", key, versions, current)
	}
	e.expectNotDownloadable(b, v1)
	if err := b.BlobFetcher.Fetch(t.Context(), key, v2.Digest); err != nil {
		t.Fatalf("fetch the kept version: %v", err)
	}
	e.expectBlob(b, v2, second)

	for range 2 {
		if err := a.Dist.CleanupBlob(t.Context(), key, nil); err != nil {
			t.Fatal(err)
		}
	}
	if versions, listed := e.storedBlobs(a)[key]; listed {
		t.Fatalf("blob %s still stored after its delete: %v", key, versions)
	}
}

// storedBlobs is what n's backend keeps of blobs outside the nodes, by
// key; nothing for a backend that keeps nothing there.
func (e *Env) storedBlobs(n *Node) map[string][]string {
	lister, ok := n.Dist.(codedistributor.BlobLister)
	if !ok {
		return nil
	}
	stored, err := lister.ListBlobs(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	return stored
}

// expectNotDownloadable: n's backend cannot download code's version from
// anywhere any more.
func (e *Env) expectNotDownloadable(n *Node, code codedistributor.Code) {
	e.t.Helper()
	dir, err := n.Blobs.NewTemp()
	if err != nil {
		e.t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(e.t.Context(), oldVersionWait)
	defer cancel()
	if err := n.Dist.Download(ctx, dir, code); err == nil {
		e.t.Fatalf("%s downloaded version %s of blob %s after its cleanup", n.Addr, codedistributor.Hex(code.Digest), code.TopologyID)
	}
}

func (e *Env) expectBlob(n *Node, code codedistributor.Code, data []byte) {
	e.t.Helper()
	if err := n.Blobs.Verify(code.TopologyID, code.Digest); err != nil {
		e.t.Fatalf("%s: %v", n.Addr, err)
	}
	got, err := os.ReadFile(filepath.Join(n.Blobs.Dir(code.TopologyID), blobstore.File))
	if err != nil || !bytes.Equal(got, data) {
		e.t.Fatalf("%s: blob %s differs from what was published (%v)", n.Addr, code.TopologyID, err)
	}
}
