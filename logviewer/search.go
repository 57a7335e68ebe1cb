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

// deepSearch answers /api/v1/deepSearch/:topoId?search-string=&num-matches=&port=&search-archived=:
// the search in the current log of every worker of the topology here (of
// the one on port, if given), and in their rotated files with
// search-archived=true; num-matches in all.
func (s *Server) deepSearch(req *request) error {
	needle, limit, err := searchParams(req)
	if err != nil {
		return err
	}
	port := 0
	if req.q.Get("port") != "" {
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
	topology := req.r.PathValue("topoId")
	workers, err := req.authorize(s, "topoId", topology, port)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.budget)
	out := struct {
		SearchString string       `json:"searchString"`
		TopologyID   string       `json:"topologyId"`
		Matches      []FileSearch `json:"matches"`
	}{needle, topology, []FileSearch{}}
	for _, w := range workers {
		for _, file := range req.logsOf(w) {
			if limit <= 0 || time.Now().After(deadline) {
				break
			}
			if !archived && !strings.HasSuffix(file, "/"+LogName) {
				continue
			}
			f, err := req.root.Open(file)
			if err != nil {
				continue // rotated away meanwhile
			}
			fi, err := f.Stat()
			if err != nil || !fi.Mode().IsRegular() {
				f.Close()
				continue
			}
			res := searchFile(f, fi.Size(), file, needle, 0, limit, deadline, baseURL(req.r))
			f.Close()
			res.FileName, res.Port = file, strconv.Itoa(w.port)
			limit -= len(res.Matches)
			out.Matches = append(out.Matches, res)
		}
	}
	writeJSON(req.w, http.StatusOK, out)
	return nil
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
