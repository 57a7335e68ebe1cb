package stormapi

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
	"sync"
)

// A summary's JSON grows with the cluster (a topology list at 5,000
// topologies is megabytes) and is shared by every request until the next
// snapshot; most of what a request costs is writing it. So a shared body is
// also compressed, once, for every client that accepts gzip (browsers, Go's
// and Python's HTTP clients do by default). The answer's per-request
// extras cannot be in that shared stream: the compressed part ends with a
// sync flush, and each request appends its extras as stored (uncompressed)
// deflate blocks, the last one final, and the gzip trailer, whose CRC-32
// continues from the shared part's. Nothing is compressed per request.

// minGzipBytes is the smallest shared body worth compressing: below a
// packet or so the gzip framing costs more than it saves.
const minGzipBytes = 1400

// sharedBody is one summary's JSON in a snapshot, and its compressed
// form, made on first use.
type sharedBody struct {
	json []byte
	once sync.Once
	gz   gzipHead
}

// gzipHead is the gzip stream of a body without its extras: the gzip
// header and deflate blocks ending in a sync flush (byte-aligned, not
// final), with the CRC-32 and length of what they hold.
type gzipHead struct {
	stream []byte
	crc    uint32
	size   int
}

// head is the gzip stream of the body opened for its extras (opened),
// compressed the first time it is asked for.
func (b *sharedBody) head() gzipHead {
	b.once.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // a valid level: no error
		crc, size := uint32(0), 0
		head, sep := opened(b.json)
		for _, p := range [][]byte{head, sep} {
			zw.Write(p) // a bytes.Buffer does not fail
			crc, size = crc32.Update(crc, crc32.IEEETable, p), size+len(p)
		}
		zw.Flush()
		b.gz = gzipHead{stream: buf.Bytes(), crc: crc, size: size}
	})
	return b.gz
}

// gzipAnswer is the gzip stream of head's content followed by tail: tail
// in stored deflate blocks (at most 65,535 bytes each), the last one final,
// then the trailer.
func gzipAnswer(head gzipHead, tail []byte) []byte {
	const maxStored = 1<<16 - 1
	blocks := max(1, (len(tail)+maxStored-1)/maxStored)
	out := make([]byte, 0, len(head.stream)+5*blocks+len(tail)+8)
	out = append(out, head.stream...)
	for i := range blocks {
		chunk := tail[min(i*maxStored, len(tail)):min((i+1)*maxStored, len(tail))]
		final := byte(0)
		if i == blocks-1 {
			final = 1
		}
		// BFINAL, BTYPE 00 (stored), the rest of the byte padding; then
		// LEN and its one's complement, little-endian (RFC 1951, 3.2.4).
		out = append(out, final)
		out = binary.LittleEndian.AppendUint16(out, uint16(len(chunk)))
		out = binary.LittleEndian.AppendUint16(out, ^uint16(len(chunk)))
		out = append(out, chunk...)
	}
	out = binary.LittleEndian.AppendUint32(out, crc32.Update(head.crc, crc32.IEEETable, tail))
	return binary.LittleEndian.AppendUint32(out, uint32(head.size+len(tail))) // ISIZE: mod 2^32
}

// acceptsGzip reports whether an Accept-Encoding header value admits gzip
// with a quality above 0: named ("gzip", "x-gzip"), or through "*" when
// gzip is not named.
func acceptsGzip(header string) bool {
	named, any := -1.0, -1.0
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		q := quality(params)
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			named = max(named, q)
		case "*":
			any = max(any, q)
		}
	}
	if named >= 0 {
		return named > 0
	}
	return any > 0
}

// quality is the q parameter among an Accept-Encoding coding's parameters:
// 1 when absent, 0 when it does not parse.
func quality(params string) float64 {
	for param := range strings.SplitSeq(params, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(param), "q="); ok {
			q, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0
			}
			return q
		}
	}
	return 1
}
