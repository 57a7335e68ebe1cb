package workerproto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// EnvBlobsFile names the blobs file in a worker's environment.
const EnvBlobsFile = "STORM_BLOBS_FILE"

// BlobsFileName is the blobs file's name in a worker's directory.
const BlobsFileName = "blobs"

// MaxBlobsBytes is the largest blobs file a worker reads.
const MaxBlobsBytes = 64 << 10

// maxLocalNameBytes bounds a blob's local name, as validate bounds a code
// file's name.
const maxLocalNameBytes = 255

// ErrBadBlobs is a blobs file that is not a valid one.
var ErrBadBlobs = errors.New("workerproto: bad blobs file")

// Blob is one blob placed in a worker's directory: the symbolic link
// LocalName, which points at the blob's Version, whose content has the
// SHA-256 SHA256 (of the blob as stored, before any unpacking).
type Blob struct {
	LocalName string
	Version   int64
	SHA256    []byte
}

// Path is where the blob is for a worker whose blobs file is blobsFile:
// beside it, under its local name.
func (b Blob) Path(blobsFile string) string {
	return filepath.Join(filepath.Dir(blobsFile), b.LocalName)
}

// Blobs is the content of a blobs file, by local name.
type Blobs []Blob

// Find is the blob placed as localName; ok is false if none is.
func (bs Blobs) Find(localName string) (b Blob, ok bool) {
	for _, b := range bs {
		if b.LocalName == localName {
			return b, true
		}
	}
	return Blob{}, false
}

// reservedNames are the protocol's own files in a worker's directory,
// which no blob may take.
var reservedNames = []string{StatusFileName, ErrorFileName, LogLevelFileName, MetricsDirName, BlobsFileName}

// CheckLocalName says why name cannot be a blob's local name in a worker's
// directory: one plain file name of [A-Za-z0-9_.-], not "." or "..", not
// hidden (the supervisor's temporary files are), and none of the
// protocol's own files.
func CheckLocalName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > maxLocalNameBytes:
		return fmt.Errorf("%d bytes, more than %d", len(name), maxLocalNameBytes)
	case name[0] == '.':
		return fmt.Errorf("%q begins with a dot", truncate(name, 64))
	case slices.Contains(reservedNames, name):
		return fmt.Errorf("%q is a file of the worker protocol (%s)", name, strings.Join(reservedNames, ", "))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("%q has a byte other than [A-Za-z0-9_.-]", truncate(name, 64))
		}
	}
	return nil
}

// EncodeBlobs is the blobs file's content for bs: one line per blob,
// "LOCALNAME VERSION SHA256HEX\n", sorted by local name. It refuses what
// ParseBlobs would.
func EncodeBlobs(bs Blobs) ([]byte, error) {
	sorted := slices.SortedFunc(slices.Values(bs), func(a, b Blob) int { return strings.Compare(a.LocalName, b.LocalName) })
	var buf bytes.Buffer
	for i, b := range sorted {
		if err := b.check(); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].LocalName == b.LocalName {
			return nil, fmt.Errorf("%w: local name %q twice", ErrBadBlobs, b.LocalName)
		}
		fmt.Fprintf(&buf, "%s %d %s\n", b.LocalName, b.Version, hex.EncodeToString(b.SHA256))
	}
	if buf.Len() > MaxBlobsBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadBlobs, buf.Len(), MaxBlobsBytes)
	}
	return buf.Bytes(), nil
}

// ParseBlobs reads a blobs file's content: lines of a local name, a
// version (a positive integer) and the content's SHA-256 in lower-case
// hex, separated by one space, each line ending in '\n', local names
// sorted and each once. Empty content is no blobs. Errors name the line
// at fault and wrap ErrBadBlobs.
func ParseBlobs(b []byte) (Blobs, error) {
	if len(b) > MaxBlobsBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadBlobs, len(b), MaxBlobsBytes)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%w: the last line does not end in a newline", ErrBadBlobs)
	}
	var out Blobs
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" && len(b) == 0 {
			break
		}
		blob, err := parseBlobLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadBlobs, i+1, err)
		}
		if n := len(out); n > 0 && out[n-1].LocalName >= blob.LocalName {
			return nil, fmt.Errorf("%w: line %d: local names are not sorted, or one is twice", ErrBadBlobs, i+1)
		}
		out = append(out, blob)
	}
	return out, nil
}

func parseBlobLine(line string) (Blob, error) {
	fields := strings.Split(line, " ")
	if len(fields) != 3 {
		return Blob{}, fmt.Errorf("want LOCALNAME VERSION SHA256, got %d fields", len(fields))
	}
	v, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || fields[1] != strconv.FormatInt(v, 10) {
		return Blob{}, fmt.Errorf("version %q is not an integer", truncate(fields[1], 32))
	}
	sum, err := hex.DecodeString(fields[2])
	if err != nil || fields[2] != hex.EncodeToString(sum) {
		return Blob{}, fmt.Errorf("sha256 %q is not lower-case hex", truncate(fields[2], 80))
	}
	b := Blob{LocalName: fields[0], Version: v, SHA256: sum}
	return b, b.check()
}

func (b Blob) check() error {
	if err := CheckLocalName(b.LocalName); err != nil {
		return fmt.Errorf("%w: local name: %v", ErrBadBlobs, err)
	}
	if b.Version < 1 {
		return fmt.Errorf("%w: %s: version %d is not positive", ErrBadBlobs, b.LocalName, b.Version)
	}
	if len(b.SHA256) != 32 {
		return fmt.Errorf("%w: %s: sha256 is %d bytes, not 32", ErrBadBlobs, b.LocalName, len(b.SHA256))
	}
	return nil
}

// ReadBlobs reads the blobs file at path (ReadFile's rules). A missing
// file is no blobs: a topology that uses none has none.
func ReadBlobs(path string) (Blobs, error) {
	b, _, err := ReadFile(path, MaxBlobsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseBlobs(b)
}
