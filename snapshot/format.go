package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"google.golang.org/protobuf/encoding/protodelim"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Format is the version of the file format this build writes and the
// newest it reads.
const Format = 1

// chunkSize is the most of a file one record carries.
const chunkSize = 1 << 20

// maxRecord bounds a record a reader accepts: a node's payload (at most
// ZooKeeper's jute.maxbuffer) or a chunk, with room for their framing.
const maxRecord = 8 << 20

// ErrInvalid: the file is not a whole snapshot this build can read:
// truncated, altered, not a snapshot, or of a newer format.
var ErrInvalid = errors.New("snapshot: not a valid snapshot file")

// Writer writes a snapshot: Header first (NewWriter), then nodes and files
// in any order, then Close, which writes the trailer. Nothing is valid
// until Close returns nil.
type Writer struct {
	w       *bufio.Writer
	sum     hash.Hash
	records int64
	err     error
}

// NewWriter starts a snapshot on w with header h (Format is set here).
func NewWriter(w io.Writer, h *clusterv1.SnapshotHeader) *Writer {
	sum := sha256.New()
	sw := &Writer{w: bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16), sum: sum}
	h.Format = Format
	sw.record(&clusterv1.SnapshotRecord{Record: &clusterv1.SnapshotRecord_Header{Header: h}})
	return sw
}

// Node adds one persistent node, its path relative to the root.
func (s *Writer) Node(path string, data []byte) error {
	return s.record(&clusterv1.SnapshotRecord{Record: &clusterv1.SnapshotRecord_Node{Node: &clusterv1.SnapshotNode{Path: path, Data: data}}})
}

// File adds one file of topology id's stored code, read from r in chunks.
func (s *Writer) File(id, name string, r io.Reader) error {
	buf := make([]byte, chunkSize)
	var off int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 || off == 0 { // an empty file is one empty chunk
			chunk := &clusterv1.SnapshotFile{TopologyId: id, Name: name, Offset: off, Data: bytes.Clone(buf[:n])}
			if rerr := s.record(&clusterv1.SnapshotRecord{Record: &clusterv1.SnapshotRecord_File{File: chunk}}); rerr != nil {
				return rerr
			}
			off += int64(n)
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil
		case err != nil:
			s.err = fmt.Errorf("snapshot: read %s of %s: %w", name, id, err)
			return s.err
		}
	}
}

// Close writes the trailer and flushes.
func (s *Writer) Close() error {
	if s.err != nil {
		return s.err
	}
	if err := s.w.Flush(); err != nil { // every record's bytes into the hash
		return err
	}
	trailer := &clusterv1.SnapshotTrailer{Records: s.records, Sha256: s.sum.Sum(nil)}
	s.record(&clusterv1.SnapshotRecord{Record: &clusterv1.SnapshotRecord_Trailer{Trailer: trailer}})
	if s.err != nil {
		return s.err
	}
	return s.w.Flush()
}

func (s *Writer) record(r *clusterv1.SnapshotRecord) error {
	if s.err != nil {
		return s.err
	}
	if _, err := protodelim.MarshalTo(s.w, r); err != nil {
		s.err = fmt.Errorf("snapshot: write: %w", err)
		return s.err
	}
	if r.GetTrailer() == nil {
		s.records++
	}
	return nil
}

// Contents is what a verified snapshot holds, apart from the file data.
type Contents struct {
	Header *clusterv1.SnapshotHeader
	Nodes  int
	Files  int // chunks
	Bytes  int64
}

// Verify reads a whole snapshot from r and checks it: a header first, of
// a format this build reads; records that parse; a trailer last that
// counts them and hashes their bytes; nothing after it. Any failure wraps
// ErrInvalid and says what is wrong. Read again to use what it holds.
func Verify(r io.Reader) (*Contents, error) {
	c := &Contents{}
	err := read(r, func(rec *clusterv1.SnapshotRecord) error {
		switch {
		case rec.GetNode() != nil:
			c.Nodes++
		case rec.GetFile() != nil:
			c.Files++
		case rec.GetHeader() != nil:
			c.Header = rec.GetHeader()
		}
		return nil
	}, &c.Bytes)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Read verifies r as Verify does while it calls visit with each node and
// file record, in order; it returns visit's first error. A caller that
// must change nothing for a file found invalid at its end verifies it
// first (Verify), then reads it again.
func Read(r io.Reader, visit func(*clusterv1.SnapshotRecord) error) error {
	var n int64
	return read(r, func(rec *clusterv1.SnapshotRecord) error {
		if rec.GetHeader() != nil {
			return nil
		}
		return visit(rec)
	}, &n)
}

// read is Verify and Read: it hashes what it reads, visits each record
// before the trailer, and checks the trailer.
func read(r io.Reader, visit func(*clusterv1.SnapshotRecord) error, size *int64) error {
	sum := sha256.New()
	counted := &countingReader{r: r}
	br := bufio.NewReaderSize(counted, 1<<16)
	// Each record's bytes are hashed as they are read: a tee in front of
	// the decoder; the trailer is checked against the hash before it.
	tee := &teeByteReader{r: br, h: sum}
	opts := protodelim.UnmarshalOptions{MaxSize: maxRecord}
	var records int64
	for first := true; ; first = false {
		rec := new(clusterv1.SnapshotRecord)
		before := sum.Sum(nil) // the hash of everything before this record
		if err := opts.UnmarshalFrom(tee, rec); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: it ends after %d whole records without a trailer: truncated", ErrInvalid, records)
			}
			return fmt.Errorf("%w: record %d: %v", ErrInvalid, records+1, err)
		}
		switch {
		case first && rec.GetHeader() == nil:
			return fmt.Errorf("%w: no header: not a Nimbus-HA snapshot", ErrInvalid)
		case first && rec.GetHeader().GetFormat() > Format:
			return fmt.Errorf("%w: format %d, newer than this build's %d (release %s wrote it): use that release or a later one",
				ErrInvalid, rec.GetHeader().GetFormat(), Format, rec.GetHeader().GetRelease())
		case !first && rec.GetHeader() != nil:
			return fmt.Errorf("%w: a second header at record %d", ErrInvalid, records+1)
		case rec.GetTrailer() != nil:
			t := rec.GetTrailer()
			if t.GetRecords() != records || !bytes.Equal(t.GetSha256(), before) {
				return fmt.Errorf("%w: the trailer counts %d records and their hash, the file holds %d that do not match: altered or cut", ErrInvalid, t.GetRecords(), records)
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: bytes after the trailer", ErrInvalid)
			}
			*size = counted.n
			return nil
		case rec.GetRecord() == nil:
			return fmt.Errorf("%w: record %d is empty", ErrInvalid, records+1)
		}
		records++
		if err := visit(rec); err != nil {
			return err
		}
	}
}

// teeByteReader hashes the bytes it reads.
type teeByteReader struct {
	r *bufio.Reader
	h hash.Hash
}

func (t *teeByteReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.h.Write(p[:n])
	return n, err
}

func (t *teeByteReader) ReadByte() (byte, error) {
	b, err := t.r.ReadByte()
	if err == nil {
		t.h.Write([]byte{b})
	}
	return b, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
