package logviewer

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nimbusha/nimbus/validate"
)

// contextBytes is how much of a line around a match an answer shows
// before and after it (Storm's 128).
const contextBytes = 128

// chunk is how much of a file a search reads at once.
const chunk = 256 << 10

// Match is one occurrence of the search string, as Storm's logviewer
// answers it.
type Match struct {
	ByteOffset   int64  `json:"byteOffset"`
	BeforeString string `json:"beforeString"`
	AfterString  string `json:"afterString"`
	MatchString  string `json:"matchString"`
	LogviewerURL string `json:"logviewerURL"`
}

// FileSearch is the answer of /api/v1/search, and one file's part of a
// deepSearch's.
type FileSearch struct {
	FileName        string  `json:"fileName,omitempty"`
	Port            string  `json:"port,omitempty"`
	IsDaemon        string  `json:"isDaemon"`
	SearchString    string  `json:"searchString"`
	StartByteOffset int64   `json:"startByteOffset"`
	Matches         []Match `json:"matches"`
	// NextByteOffset is where a next search goes on: set when it stopped
	// at num-matches or at its time budget before the end.
	NextByteOffset *int64 `json:"nextByteOffset,omitempty"`
}

// searchParams reads search-string and num-matches.
func searchParams(req *request) (needle string, limit int, err error) {
	needle = req.q.Get("search-string")
	switch {
	case needle == "":
		return "", 0, validate.Invalid("search-string", "missing")
	case len(needle) > maxSearchLen:
		return "", 0, validate.Invalid("search-string", "at most %d bytes, got %d", maxSearchLen, len(needle))
	}
	n, err := intParam(req.q, "num-matches", defaultMatch, 1, maxMatches)
	return needle, int(n), err
}

// search answers /api/v1/search?file=&search-string=&num-matches=&start-byte-offset=:
// the first num-matches occurrences of search-string (a plain substring:
// no pattern can make it slow) from start-byte-offset on.
func (s *Server) search(req *request) error {
	needle, limit, err := searchParams(req)
	if err != nil {
		return err
	}
	from, err := intParam(req.q, "start-byte-offset", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	f, fi, file, err := req.open(s, "file")
	if err != nil {
		return err
	}
	defer f.Close()
	if from > fi.Size() {
		return validate.Invalid("start-byte-offset", "%d is past the end of %s (%d bytes)", from, file, fi.Size())
	}
	res := searchFile(f, fi.Size(), file, needle, from, limit, time.Now().Add(s.budget), baseURL(req.r))
	writeJSON(req.w, http.StatusOK, res)
	return nil
}

// Matched is one worker's part of a deepSearch answer, Storm's: the
// search in its logs, one entry per file searched (FileSearch with
// FileName and Port), and FileOffset, the index (in listLogs' order) of
// the first file not searched to its end: with the last entry's
// nextByteOffset, where a next search goes on (start-file-offset,
// start-byte-offset).
type Matched struct {
	FileOffset   int          `json:"fileOffset"`
	SearchString string       `json:"searchString"`
	Matches      []FileSearch `json:"matches"`
}

// deepSearch answers /api/v1/deepSearch/:topoId?search-string=&num-matches=&port=&search-archived=&start-file-offset=&start-byte-offset=
// as Storm does: the search in the current log of each worker of the
// topology here, and in its rotated files with search-archived=true, up
// to num-matches per worker. With a port, one worker's Matched, from the
// start-file-offset-th of its files (0 is worker.log) at
// start-byte-offset; without, a list of every worker's, from the start.
func (s *Server) deepSearch(req *request) error {
	needle, limit, err := searchParams(req)
	if err != nil {
		return err
	}
	port := 0
	if req.q.Get("port") != "" && req.q.Get("port") != "*" {
		if port, err = parsePort("port", req.q.Get("port")); err != nil {
			return err
		}
	}
	archived := false
	if v := req.q.Get("search-archived"); v != "" {
		if archived, err = strconv.ParseBool(v); err != nil {
			return validate.Invalid("search-archived", "%q is not true or false", v)
		}
	}
	from, err := deepSearchStart(req.q, port, archived)
	if err != nil {
		return err
	}
	topology := req.r.PathValue("topoId")
	workers, err := req.authorize(s, "topoId", topology, port)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.budget)
	all := make([]Matched, 0, len(workers))
	for _, w := range workers {
		files := req.logsOf(w)
		if !archived {
			files = files[:min(len(files), 1)] // worker.log, listed first
		}
		all = append(all, req.searchWorker(w, files, needle, limit, from, deadline))
	}
	if port != 0 {
		writeJSON(req.w, http.StatusOK, all[0])
		return nil
	}
	writeJSON(req.w, http.StatusOK, all)
	return nil
}

// searchPosition is where a deepSearch of one worker starts: the index of
// a file in its list, and a byte in that file.
type searchPosition struct {
	file int
	byte int64
}

// deepSearchStart reads start-file-offset and start-byte-offset, which
// name a place in one worker's files: a port is needed with them.
func deepSearchStart(q urlValues, port int, archived bool) (searchPosition, error) {
	var p searchPosition
	file, err := intParam(q, "start-file-offset", 0, 0, Rotated)
	if err != nil {
		return p, err
	}
	b, err := intParam(q, "start-byte-offset", 0, 0, 1<<62)
	if err != nil {
		return p, err
	}
	for name, v := range map[string]int64{"start-file-offset": file, "start-byte-offset": b} {
		if v != 0 && port == 0 {
			return p, validate.Invalid(name, "names a place in one worker's logs: give its port too")
		}
	}
	if file > 0 && !archived {
		return p, validate.Invalid("start-file-offset", "%d names a rotated file: give search-archived=true too", file)
	}
	return searchPosition{file: int(file), byte: b}, nil
}

// searchWorker searches files, one worker's, from the position from on,
// until limit matches are found or the deadline passes.
func (req *request) searchWorker(w worker, files []string, needle string, limit int, from searchPosition, deadline time.Time) Matched {
	m := Matched{FileOffset: from.file, SearchString: needle, Matches: []FileSearch{}}
	start := from.byte
	for ; m.FileOffset < len(files); m.FileOffset++ {
		file := files[m.FileOffset]
		res, ok := req.searchLog(file, needle, start, limit, deadline)
		start = 0
		if !ok {
			continue // rotated away meanwhile
		}
		res.FileName, res.Port = file, strconv.Itoa(w.port)
		limit -= len(res.Matches)
		m.Matches = append(m.Matches, res)
		if res.NextByteOffset != nil {
			return m // stopped in this file: go on here
		}
		if limit <= 0 {
			m.FileOffset++
			return m
		}
	}
	return m
}

// searchLog searches one log, checked as open checks one, from the byte
// from on; ok is false for a file gone or not plain.
func (req *request) searchLog(file, needle string, from int64, limit int, deadline time.Time) (FileSearch, bool) {
	fi, err := req.lstatPlain("file", file)
	if err != nil {
		return FileSearch{}, false
	}
	f, fi, err := req.openPlain("file", file, fi)
	if err != nil {
		return FileSearch{}, false
	}
	defer f.Close()
	return searchFile(f, fi.Size(), file, needle, min(from, fi.Size()), limit, deadline, baseURL(req.r)), true
}

// searchFile finds up to limit occurrences of needle in f's first size
// bytes from from on, reading until deadline.
func searchFile(f io.ReaderAt, size int64, file, needle string, from int64, limit int, deadline time.Time, base string) FileSearch {
	res := FileSearch{IsDaemon: "no", SearchString: needle, StartByteOffset: from, Matches: []Match{}}
	n := []byte(needle)
	buf := make([]byte, chunk+len(n)-1)
	for off := from; off < size; {
		if time.Now().After(deadline) {
			res.NextByteOffset = &off
			return res
		}
		m, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return res
		}
		b := buf[:m]
		last := int64(m) < int64(len(buf))
		for i := 0; ; {
			j := bytes.Index(b[i:], n)
			if j < 0 || (!last && i+j >= chunk) { // past the cut: the next read finds it
				break
			}
			at := off + int64(i+j)
			res.Matches = append(res.Matches, matchAt(f, size, file, needle, at, base))
			if len(res.Matches) == limit {
				next := at + int64(len(n))
				if next < size {
					res.NextByteOffset = &next
				}
				return res
			}
			i += j + len(n)
		}
		if last {
			break
		}
		off += chunk // the next read overlaps by len(n)-1: a match across the cut is found once
	}
	return res
}

// matchAt is the match of needle at offset at, with the rest of its line
// around it, at most contextBytes each side.
func matchAt(f io.ReaderAt, size int64, file, needle string, at int64, base string) Match {
	start := max(at-contextBytes, 0)
	end := min(at+int64(len(needle))+contextBytes, size)
	buf := make([]byte, end-start)
	n, _ := f.ReadAt(buf, start)
	buf = buf[:n]
	mid := int(at - start)
	before, after := buf[:min(mid, len(buf))], buf[min(mid+len(needle), len(buf)):]
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	if i := bytes.IndexByte(after, '\n'); i >= 0 {
		after = after[:i]
	}
	return Match{
		ByteOffset: at, MatchString: needle,
		BeforeString: validUTF8(before), AfterString: validUTF8(after),
		LogviewerURL: base + "/api/v1/log?" + url.Values{"file": {file}, "start": {strconv.FormatInt(max(at-DefaultLength/2, 0), 10)},
			"length": {strconv.Itoa(DefaultLength)}}.Encode(),
	}
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// baseURL is how the caller reached this logviewer, for the links in an
// answer.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// ioLimit reads at most n bytes of r.
func ioLimit(r *os.File, n int64) io.Reader { return io.LimitReader(r, n) }
