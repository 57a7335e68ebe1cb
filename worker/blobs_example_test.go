package worker_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nimbusha/nimbus/worker"
	"github.com/nimbusha/nimbus/workerproto"
)

// placeBlob does what a supervisor does when a blob's version changes:
// the link switched to the new version, then the blobs file replaced, then
// SIGUSR1.
func placeBlob(dir, blobsFile, localName string, version int64, content string) {
	target := filepath.Join(dir, fmt.Sprintf("v%d", version))
	must(os.WriteFile(target, []byte(content), 0o444))
	tmp := filepath.Join(dir, "."+localName+".new")
	must(os.Symlink(target, tmp))
	must(os.Rename(tmp, filepath.Join(dir, localName)))
	sum := sha256.Sum256([]byte(content))
	b, err := workerproto.EncodeBlobs(workerproto.Blobs{{LocalName: localName, Version: version, SHA256: sum[:]}})
	must(err)
	must(workerproto.ReplaceFile(blobsFile, b, nil))
}

// A worker reads its blobs through their links, and hears of each update
// on BlobUpdates: it opens the path again to read the new version.
func ExampleWorker_BlobUpdates() {
	dir, err := os.MkdirTemp("", "worker-blobs-")
	must(err)
	defer os.RemoveAll(dir)
	blobsFile := filepath.Join(dir, workerproto.BlobsFileName)
	placeBlob(dir, blobsFile, "stopwords.txt", 1, "a an the")
	w, err := worker.New(worker.Config{Getenv: func(k string) string {
		if k == workerproto.EnvBlobsFile {
			return blobsFile
		}
		return ""
	}})
	must(err)
	must(w.Run(context.Background(), func(ctx context.Context) error {
		for _, version := range []int64{1, 2} {
			u := <-w.BlobUpdates()
			b, _ := u.Blobs.Find("stopwords.txt")
			content, err := os.ReadFile(w.BlobPath("stopwords.txt"))
			must(err)
			fmt.Printf("changed %v: version %d: %s\n", u.Changed, b.Version, content)
			if version == 1 { // `stormctl blobstore update stopwords`
				placeBlob(dir, blobsFile, "stopwords.txt", 2, "a an the of to")
				must(syscall.Kill(os.Getpid(), workerproto.StatusSignal))
			}
		}
		return nil
	}))
	// Output:
	// changed [stopwords.txt]: version 1: a an the
	// changed [stopwords.txt]: version 2: a an the of to
}
