package codedistributor

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"os"
	"path/filepath"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// VerifiedFile is one file of a bundle being downloaded, written into the
// download's directory and hashed as it is: a backend writes what a source
// sends, then Finish checks it against the meta. Bytes beyond the size the
// meta lists fail the write at once, and any failure removes the file, so
// nothing unverified is left to install.
type VerifiedFile struct {
	out    *os.File
	path   string
	want   *clusterv1.CodeFile
	source string // where the bytes come from, for errors
	h      hash.Hash
	n      int64
	done   bool
}

// CreateVerified creates file f of a bundle in dir; source says where its
// bytes come from ("127.0.0.1:6627", "hdfs:///storm/..."), for errors.
func CreateVerified(dir string, f *clusterv1.CodeFile, source string) (*VerifiedFile, error) {
	path := filepath.Join(dir, f.GetName())
	out, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &VerifiedFile{out: out, path: path, want: f, source: source, h: sha256.New()}, nil
}

// Write writes p, failing with ErrCorrupt once more bytes have come than
// the meta lists.
func (v *VerifiedFile) Write(p []byte) (int, error) {
	if v.n += int64(len(p)); v.n > v.want.GetSize() {
		return 0, fmt.Errorf("%w: %s from %s: more than the %d bytes the meta lists", ErrCorrupt, v.want.GetName(), v.source, v.want.GetSize())
	}
	v.h.Write(p)
	return v.out.Write(p)
}

// Finish closes the file and checks its size and SHA-256 against the
// meta: an error wraps ErrCorrupt when they differ. The file is removed
// unless it is exactly what the meta lists.
func (v *VerifiedFile) Finish() error {
	v.done = true
	err := v.out.Close()
	if sum := v.h.Sum(nil); err == nil && (v.n != v.want.GetSize() || !bytes.Equal(sum, v.want.GetSha256())) {
		err = fmt.Errorf("%w: %s from %s: %d bytes with SHA-256 %s, meta says %d bytes, %s", ErrCorrupt,
			v.want.GetName(), v.source, v.n, Hex(sum), v.want.GetSize(), Hex(v.want.GetSha256()))
	}
	if err != nil {
		os.Remove(v.path)
	}
	return err
}

// Abort closes and removes the file, unless Finish was called: defer it
// beside CreateVerified.
func (v *VerifiedFile) Abort() {
	if !v.done {
		v.done = true
		v.out.Close()
		os.Remove(v.path)
	}
}
