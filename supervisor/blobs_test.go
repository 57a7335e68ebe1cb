package supervisor

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/validate"
	"github.com/nimbusha/nimbus/workerproto"
)

func TestBlobUsesRefusesTheProtocolsNames(t *testing.T) {
	for _, name := range []string{"status", "errors", "blobs", "metrics", "log-levels.json", ".hidden"} {
		_, err := blobUses(map[string]string{validate.TopologyBlobstoreMap: `{"k": {"localname": "` + name + `"}}`})
		if err == nil || !strings.Contains(err.Error(), `topology.blobstore.map["k"].localname`) {
			t.Errorf("localname %q: %v, want an error naming the field", name, err)
		}
	}
	uses, err := blobUses(map[string]string{validate.TopologyBlobstoreMap: `{"k": {"uncompress": true}}`})
	if err != nil || uses["k"].LocalName != "k" || !uses["k"].Uncompress {
		t.Fatalf("a good map: %v, %v", uses, err)
	}
	if uses, err := blobUses(map[string]string{}); err != nil || uses != nil {
		t.Fatalf("no map: %v, %v", uses, err)
	}
}

// An adopted worker's blobs are read back from its directory: the blobs
// file and the links agree, or the blob is left for the loop to place.
func TestAdoptedBlobsReadsLinksBack(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	sum := sha256.Sum256([]byte("content"))
	version := func(key string, n int64, uncompress bool) blobstore.Version {
		v := blobstore.Version{Key: key, Version: n, SHA256: sum[:], Uncompress: uncompress}
		v.Path = filepath.Join(root, v.ID())
		return v
	}
	uses := map[string]validate.BlobUse{"words": {LocalName: "words.txt"}, "dict": {LocalName: "dict", Uncompress: true}, "gone": {LocalName: "gone"}}
	placed := map[string]blobstore.Version{"words": version("words", 3, false), "dict": version("dict", 1, true)}
	for key, v := range placed {
		if err := blobstore.Link(dir, uses[key].LocalName, v.Path); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeBlobsFile(dir, uses, placed, nil); err != nil {
		t.Fatal(err)
	}
	got := adoptedBlobs(workerSpec{Dir: dir, Blobs: uses})
	if len(got) != 2 || got["words"].ID() != placed["words"].ID() || got["words"].Path != placed["words"].Path ||
		got["dict"].ID() != placed["dict"].ID() {
		t.Fatalf("adopted %+v, want %+v", got, placed)
	}

	// The link moved on but the file did not say so (a supervisor that
	// died between the two): left out, to be placed again.
	if err := blobstore.Link(dir, "words.txt", version("words", 4, false).Path); err != nil {
		t.Fatal(err)
	}
	if got := adoptedBlobs(workerSpec{Dir: dir, Blobs: uses}); len(got) != 1 || got["dict"].Version != 1 {
		t.Fatalf("adopted %+v, want dict alone", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, workerproto.BlobsFileName)); !strings.Contains(string(b), "words.txt 3 ") {
		t.Fatalf("the blobs file: %q", b)
	}
}
