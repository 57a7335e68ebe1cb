package hdfs_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codedistributor/hdfs"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// on configures nodes for the real HDFS h, in directories of the test's
// own.
func on(t *testing.T, h *testcluster.HDFS) func(*configs.Config) {
	return func(cfg *configs.Config) {
		cfg.HDFSNamenodeAddresses = []string{h.Addr()}
		cfg.HDFSUser = "nimbus"
		cfg.HDFSStormDir = "/storm/" + t.Name()
		cfg.BlobstoreDir = "/blobs/" + t.Name()
	}
}

// TestConformance runs the suite and this backend's own cases against one
// real HDFS (starting one takes a while).
func TestConformance(t *testing.T) {
	h := testcluster.StartHDFS(t)
	conformance.Run(t, hdfs.Name, on(t, h))
	t.Run("FailedBlobUploadLeavesTheCommittedVersion", func(t *testing.T) { failedBlobUploadLeavesTheCommittedVersion(t, h) })
	t.Run("ListSkipsTheBlobstoreDir", func(t *testing.T) { listSkipsTheBlobstoreDir(t, h) })
}

// A blob upload that fails removes only what it wrote: neither a new
// version's failure nor the committed version's own upload failing again
// takes the committed version from HDFS.
func failedBlobUploadLeavesTheCommittedVersion(t *testing.T, h *testcluster.HDFS) {
	e := conformance.NewEnv(t, hdfs.Name, on(t, h))
	a, b := e.Node(), e.Node()
	data := e.RandomBlob(100 << 10)
	v1 := e.PublishBlob(a, "failing", data)
	other := &clusterv1.CodeFile{Name: blobstore.File, Size: 10, Sha256: bytes.Repeat([]byte{1}, 32)}
	for _, content := range []*clusterv1.CodeFile{other, v1.Meta.GetFiles()[0]} {
		empty := t.TempDir() // the file to upload is missing: the upload fails
		code := codedistributor.Code{Kind: codedistributor.KindBlob, TopologyID: "failing", Meta: blobstore.Meta("failing", content)}
		if _, err := a.Dist.Upload(t.Context(), empty, code); err == nil {
			t.Fatal("an upload without its file succeeded")
		}
	}
	stored, err := a.Dist.(codedistributor.BlobLister).ListBlobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{codedistributor.Hex(v1.Meta.GetFiles()[0].GetSha256())}
	if got := stored["failing"]; !slices.Equal(got, want) {
		t.Fatalf("versions in HDFS after the failed uploads: %v, want %v", got, want)
	}
	if err := b.BlobFetcher.Fetch(t.Context(), "failing", v1.Digest); err != nil {
		t.Fatalf("fetch the committed version: %v", err)
	}
}

// blobstore.dir inside hdfs.storm.dir is not a topology's directory: the
// leader's sweep of orphaned code would remove every blob.
func listSkipsTheBlobstoreDir(t *testing.T, h *testcluster.HDFS) {
	e := conformance.NewEnv(t, hdfs.Name, func(cfg *configs.Config) {
		on(t, h)(cfg)
		cfg.BlobstoreDir = cfg.HDFSStormDir + "/blobs/store"
	})
	a := e.Node()
	code, _ := e.Publish(a, "listed-1-1", 1000)
	e.PublishBlob(a, "unlisted", e.RandomBlob(1000))
	ids, err := a.Dist.(codedistributor.Lister).List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{code.TopologyID}) {
		t.Fatalf("List: %v, want only %s", ids, code.TopologyID)
	}
}
