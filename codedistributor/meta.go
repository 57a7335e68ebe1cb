package codedistributor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// The files of every bundle.
const (
	ArtifactFile = "artifact" // the uploaded jar or program
	SpecFile     = "spec.pb"  // the serialized nimbus.v1.TopologySpec
	metaFile     = "meta.pb"  // the serialized CodeMeta; not listed in itself
)

// EncodeMeta serializes a meta and returns the bytes and their digest.
func EncodeMeta(meta *clusterv1.CodeMeta) (data, digest []byte) {
	data = cluster.Encode(meta)
	sum := sha256.Sum256(data)
	return data, sum[:]
}

// DecodeMeta parses meta bytes after checking them against digest.
func DecodeMeta(data, digest []byte) (*clusterv1.CodeMeta, error) {
	sum := sha256.Sum256(data)
	if !bytes.Equal(sum[:], digest) {
		return nil, fmt.Errorf("%w: meta has digest %s, want %s", ErrCorrupt, Hex(sum[:]), Hex(digest))
	}
	meta := new(clusterv1.CodeMeta)
	if err := proto.Unmarshal(data, meta); err != nil {
		return nil, fmt.Errorf("%w: meta: %v", ErrCorrupt, err)
	}
	seen := make(map[string]bool, len(meta.GetFiles()))
	for _, f := range meta.GetFiles() {
		if !safeName(f.GetName()) {
			return nil, fmt.Errorf("%w: meta lists unsafe file name %q", ErrCorrupt, f.GetName())
		}
		if seen[f.GetName()] {
			return nil, fmt.Errorf("%w: meta lists file name %q twice", ErrCorrupt, f.GetName())
		}
		seen[f.GetName()] = true
	}
	return meta, nil
}

// Hex formats a digest for logs and errors.
func Hex(digest []byte) string { return hex.EncodeToString(digest) }

// safeName accepts file names that stay inside the bundle directory: one
// path element ("/" is its own base name, but not local).
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && name != metaFile &&
		filepath.Base(name) == name && filepath.IsLocal(name) && len(name) <= 255
}

// HashFile returns the size and SHA-256 of a file.
func HashFile(path string) (int64, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, nil, err
	}
	return n, h.Sum(nil), nil
}

// DescribeFile returns the CodeFile of one file in dir.
func DescribeFile(dir, name string) (*clusterv1.CodeFile, error) {
	size, sum, err := HashFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return &clusterv1.CodeFile{Name: name, Size: size, Sha256: sum}, nil
}
