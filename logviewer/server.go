package logviewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/internal/hostcheck"
	"github.com/nimbusha/nimbus/validate"
)

// Limits of one request.
const (
	DefaultLength = 51200   // /log's length when none is given: Storm's
	MaxLength     = 1 << 20 // the most /log answers at once
	maxSearchLen  = 1024    // a search string's bytes
	maxMatches    = 1000    // num-matches
	defaultMatch  = 10      // num-matches when none is given
)

// Server answers Storm's logviewer API from the logs under Root. It holds
// no mutable state; it is safe for concurrent use.
type Server struct {
	root      string
	authz     *auth.Authorizer
	log       *slog.Logger
	budget    time.Duration
	hostNames func() []string
	mux       *http.ServeMux
}

// Config is what a Server needs.
type Config struct {
	Root  string           // Root(storm.local.dir)
	Authz *auth.Authorizer // who the caller is and whether it may read a topology's logs
	Log   *slog.Logger
	// SearchBudget bounds the time one search or deepSearch reads files;
	// its answer then says where to go on (nextByteOffset). 0: 5 s.
	SearchBudget time.Duration
	// HostNames are the names besides IP addresses and localhost that a
	// request's Host may give (package hostcheck, against DNS
	// rebinding): the names the supervisor is configured and certified
	// as. nil: none.
	HostNames func() []string
}

// New returns the server of cfg; it starts nothing.
func New(cfg Config) *Server {
	s := &Server{root: cfg.Root, authz: cfg.Authz, log: cfg.Log.With("component", "logviewer"), budget: cfg.SearchBudget, hostNames: cfg.HostNames}
	if s.budget <= 0 {
		s.budget = 5 * time.Second
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("/api/v1/log", s.serve(s.logPage))
	s.mux.Handle("/api/v1/download", s.serve(s.download))
	s.mux.Handle("/api/v1/listLogs", s.serve(s.listLogs))
	s.mux.Handle("/api/v1/search", s.serve(s.search))
	s.mux.Handle("/api/v1/deepSearch/{topoId}", s.serve(s.deepSearch))
	s.mux.Handle("/", s.serve(func(*request) error {
		return fmt.Errorf("%w: the logviewer serves /api/v1/log, download, listLogs, search and deepSearch", apierr.ErrNoSuchPath)
	}))
	return s
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// request is one call: who made it and the root it reads under.
type request struct {
	w    http.ResponseWriter
	r    *http.Request
	q    urlValues
	ctx  context.Context // carries the principal
	root *os.Root
}

type urlValues interface {
	Get(string) string
	Has(string) bool
}

// serve is every route's common path, in steps: GET only, a Host that
// names this supervisor, authenticate, open the root, answer; any error
// is answered as the REST API answers one.
func (s *Server) serve(h func(*request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", http.MethodGet)
			s.fail(w, r, fmt.Errorf("%w: %s %s: use GET", apierr.ErrMethodNotAllowed, r.Method, r.URL.Path))
			return
		}
		if err := s.checkHost(r); err != nil {
			s.fail(w, r, err)
			return
		}
		user, err := s.authz.Authenticate(r.TLS)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		root, err := os.OpenRoot(s.root)
		if errors.Is(err, fs.ErrNotExist) {
			s.fail(w, r, fmt.Errorf("%w: no worker has run on this supervisor", apierr.ErrNotFound))
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer root.Close()
		req := &request{w: w, r: r, q: r.URL.Query(), ctx: auth.NewContext(r.Context(), user), root: root}
		if err := h(req); err != nil {
			s.fail(w, r, err)
		}
	})
}

// checkHost refuses a request whose Host names something else than this
// supervisor (a page rebinding its own name to this address).
func (s *Server) checkHost(r *http.Request) error {
	var names []string
	if s.hostNames != nil {
		names = s.hostNames()
	}
	if hostcheck.Allowed(r.Host, names) {
		return nil
	}
	return fmt.Errorf("%w: Host %q is not a name of this supervisor (a page rebinding its own name to this address?); "+
		"use its address, localhost, storm.local.hostname or a name in its certificate", apierr.ErrPermissionDenied, r.Host)
}

// fail answers err as the nimbuses' REST API does: {"error": "<code>
// <reason>", "errorMessage": ...}, with apistatus's code for it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := apistatus.HTTPStatus(err)
	switch {
	case code == http.StatusUnauthorized:
		s.log.Debug("logviewer request refused", "path", r.URL.Path, "code", code, "error", err.Error())
	case code >= 500 || code == http.StatusForbidden:
		s.log.Info("logviewer request refused", "path", r.URL.Path, "code", code, "error", err.Error(), "client", r.RemoteAddr)
	}
	writeJSON(w, code, map[string]string{"error": strconv.Itoa(code) + " " + http.StatusText(code), "errorMessage": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// worker is one worker's directory, <topology-id>/<port>.
type worker struct {
	topology string
	port     int
}

func (wk worker) rel() string { return wk.topology + "/" + strconv.Itoa(wk.port) }

// parseFile checks a file parameter, <topology-id>/<port>/<name>: a
// relative path with nothing to clean, a valid topology id, a port and a
// log's name. It touches no file.
func parseFile(field, file string) (worker, string, error) {
	if file == "" {
		return worker{}, "", validate.Invalid(field, "missing: name a log as <topology-id>/<port>/worker.log")
	}
	if strings.HasPrefix(file, "/") || path.Clean(file) != file {
		return worker{}, "", validate.Invalid(field, "%q is not a plain relative path <topology-id>/<port>/<name>", file)
	}
	parts := strings.Split(file, "/")
	if len(parts) != 3 {
		return worker{}, "", validate.Invalid(field, "%q is not <topology-id>/<port>/<name>", file)
	}
	if err := validate.TopologyID(field, parts[0]); err != nil {
		return worker{}, "", err
	}
	port, err := parsePort(field, parts[1])
	if err != nil {
		return worker{}, "", err
	}
	if !logName.MatchString(parts[2]) {
		return worker{}, "", validate.Invalid(field, "%q is not a worker's log (worker.log or worker.log.N)", parts[2])
	}
	return worker{topology: parts[0], port: port}, parts[2], nil
}

func parsePort(field, s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != s {
		return 0, validate.Invalid(field, "%q is not a port (1-65535)", s)
	}
	return p, nil
}

// intParam reads an integer parameter within [lo, hi], def when absent.
func intParam(q urlValues, name string, def, lo, hi int64) (int64, error) {
	if !q.Has(name) || q.Get(name) == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(q.Get(name), 10, 64)
	if err != nil {
		return 0, validate.Invalid(name, "%q is not an integer", q.Get(name))
	}
	if v < lo || v > hi {
		return 0, validate.Invalid(name, "must be between %d and %d, got %d", lo, hi, v)
	}
	return v, nil
}

// authorize finds the logs of topology on this supervisor (on port, if
// not 0) and asks whether the caller may read them, by their worker.yaml.
// It returns the workers found, by port.
func (req *request) authorize(s *Server, field, topology string, port int) ([]worker, error) {
	if err := validate.TopologyID(field, topology); err != nil {
		return nil, err
	}
	workers, err := req.workersOf(field, topology)
	if err != nil {
		return nil, err
	}
	if len(workers) == 0 {
		return nil, fmt.Errorf("%w: %s: no logs of topology %s on this supervisor", apierr.ErrNotFound, field, topology)
	}
	if port != 0 {
		i := slices.IndexFunc(workers, func(w worker) bool { return w.port == port })
		if i < 0 {
			return nil, fmt.Errorf("%w: port: no worker of topology %s ran on port %d of this supervisor", apierr.ErrNotFound, topology, port)
		}
		workers = workers[i : i+1]
	}
	var m Meta
	for _, w := range workers {
		if m, err = readMeta(req.root, w.rel()); err == nil {
			break
		}
	}
	if err == nil && m.TopologyID != topology {
		err = fmt.Errorf("logviewer: %s names topology %q", MetaName, m.TopologyID)
	}
	if err != nil {
		// Nobody's logs: the supervisor writes worker.yaml before any.
		return nil, fmt.Errorf("%w: %s: the logs of %s name no owner", apierr.ErrPermissionDenied, field, topology)
	}
	t := auth.Target{Topology: topology, Owner: m.Owner, Users: m.TopologyUsers, LogsUsers: m.LogsUsers}
	if err := s.authz.Check(req.ctx, auth.ActionReadLogs, t); err != nil {
		return nil, err
	}
	return workers, nil
}

// workersOf lists the worker directories of topology, by port: real
// directories only, a symlink in place of the topology's or a worker's
// refused.
func (req *request) workersOf(field, topology string) ([]worker, error) {
	fi, err := req.root.Lstat(topology)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, validate.Invalid(field, "the logs of %s cannot be read here: %v", topology, err)
	case !fi.IsDir():
		return nil, validate.Invalid(field, "%s is not a directory here (%v): not served", topology, fi.Mode().Type())
	}
	d, err := req.root.Open(topology)
	if err != nil {
		return nil, validate.Invalid(field, "the logs of %s cannot be read here: %v", topology, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil
	}
	var out []worker
	for _, e := range entries {
		if p, err := parsePort("port", e.Name()); err == nil && e.IsDir() {
			out = append(out, worker{topology: topology, port: p})
		}
	}
	slices.SortFunc(out, func(a, b worker) int { return a.port - b.port })
	return out, nil
}

// lstatPlain checks every part of rel, a path under the root: each but
// the last a directory, the last a regular file, none a symlink. It
// returns the last's.
func (req *request) lstatPlain(field, rel string) (os.FileInfo, error) {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := req.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %s: no log %s on this supervisor", apierr.ErrNotFound, field, rel)
		case err != nil:
			return nil, validate.Invalid(field, "%s cannot be read here: %v", rel, err)
		case i < len(parts)-1 && !fi.IsDir():
			return nil, validate.Invalid(field, "%s is not a directory (%v): not served", p, fi.Mode().Type())
		case i == len(parts)-1 && !fi.Mode().IsRegular():
			return nil, validate.Invalid(field, "%s is not a regular file (%v): not served", rel, fi.Mode().Type())
		case i == len(parts)-1:
			return fi, nil
		}
	}
	return nil, validate.Invalid(field, "%q names no file", rel)
}

// openPlain opens rel, a path lstatPlain checked as fi: what was opened
// must be what it saw, so a symlink put in its place meanwhile is
// refused. Whatever changes meanwhile, the root keeps anything outside
// it out of reach.
func (req *request) openPlain(field, rel string, fi os.FileInfo) (*os.File, os.FileInfo, error) {
	f, err := req.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, validate.Invalid(field, "%s cannot be read here: %v", rel, err)
	}
	opened, err := f.Stat()
	if err != nil || !os.SameFile(fi, opened) {
		f.Close()
		return nil, nil, validate.Invalid(field, "%s changed while it was opened: not served", rel)
	}
	return f, opened, nil
}

// open opens a log, authorized, under the root: a regular file, reached
// through no symlink (lstatPlain, openPlain).
func (req *request) open(s *Server, field string) (*os.File, os.FileInfo, string, error) {
	file := req.q.Get(field)
	wk, _, err := parseFile(field, file)
	if err != nil {
		return nil, nil, "", err
	}
	if _, err := req.authorize(s, field, wk.topology, wk.port); err != nil {
		return nil, nil, "", err
	}
	fi, err := req.lstatPlain(field, file)
	if err != nil {
		return nil, nil, "", err
	}
	f, opened, err := req.openPlain(field, file, fi)
	if err != nil {
		return nil, nil, "", err
	}
	return f, opened, file, nil
}

// logPage answers /api/v1/log?file=&start=&length=: length bytes (at most
// MaxLength) from start, or the last length bytes without a start, as
// text. Headers say where it is: X-Log-Start, X-Log-Next (where the next
// read starts), X-Log-File-Size and which file it is (FileIDHeader: a
// follower sees a rotation by it); a start past the end answers no
// bytes.
func (s *Server) logPage(req *request) error {
	length, err := intParam(req.q, "length", DefaultLength, 1, MaxLength)
	if err != nil {
		return err
	}
	start, err := intParam(req.q, "start", -1, 0, 1<<62)
	if err != nil {
		return err
	}
	f, fi, _, err := req.open(s, "file")
	if err != nil {
		return err
	}
	defer f.Close()
	size := fi.Size()
	if start < 0 {
		start = max(size-length, 0)
	}
	n := max(min(length, size-start), 0)
	h := req.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Log-File-Size", strconv.FormatInt(size, 10))
	h.Set(FileIDHeader, fileID(f, fi))
	h.Set("X-Log-Start", strconv.FormatInt(min(start, size), 10))
	h.Set("X-Log-Next", strconv.FormatInt(min(start, size)+n, 10))
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	req.w.WriteHeader(http.StatusOK)
	if n > 0 && req.r.Method != http.MethodHead {
		_, _ = io.Copy(req.w, io.NewSectionReader(f, start, n))
	}
	return nil
}

// download answers /api/v1/download?file=: the whole file, as an
// attachment.
func (s *Server) download(req *request) error {
	f, fi, file, err := req.open(s, "file")
	if err != nil {
		return err
	}
	defer f.Close()
	h := req.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", strings.ReplaceAll(file, "/", "-")))
	h.Set("X-Content-Type-Options", "nosniff")
	// Only what the file held when opened: a log still written to is
	// cut there, so Content-Length holds.
	h.Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	req.w.WriteHeader(http.StatusOK)
	if req.r.Method != http.MethodHead {
		_, _ = io.Copy(req.w, io.NewSectionReader(f, 0, fi.Size()))
	}
	return nil
}

// listLogs answers /api/v1/listLogs?topoId=&port=: the logs of the
// topology's workers here (of the one on port, if given), as Storm
// answers, a JSON list of file names, each what file= takes. Without a
// topoId it lists every topology's the caller may read. topologyId is
// taken for topoId too.
func (s *Server) listLogs(req *request) error {
	port := 0
	if req.q.Get("port") != "" {
		p, err := parsePort("port", req.q.Get("port"))
		if err != nil {
			return err
		}
		port = p
	}
	field, id, err := topologyParam(req.q)
	if err != nil {
		return err
	}
	var topologies []string
	if id != "" {
		topologies = []string{id}
	} else {
		all, err := req.topologies()
		if err != nil {
			return err
		}
		topologies = all
	}
	files := []string{}
	for _, t := range topologies {
		workers, err := req.authorize(s, field, t, port)
		if err != nil {
			if id == "" {
				continue // another's, or not one
			}
			return err
		}
		for _, w := range workers {
			files = append(files, req.logsOf(w)...)
		}
	}
	writeJSON(req.w, http.StatusOK, files)
	return nil
}

// topologyParam is listLogs' topology, and the parameter that names it:
// Storm's topoId, or topologyId; none for every topology.
func topologyParam(q urlValues) (field, id string, err error) {
	storms, alias := q.Get("topoId"), q.Get("topologyId")
	switch {
	case storms != "" && alias != "" && storms != alias:
		return "", "", validate.Invalid("topoId", "%q, while topologyId names %q", storms, alias)
	case storms == "" && alias != "":
		return "topologyId", alias, nil
	}
	return "topoId", storms, nil
}

// topologies lists the topologies that have logs here.
func (req *request) topologies() ([]string, error) {
	d, err := req.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return slices.DeleteFunc(names, func(n string) bool { return validate.TopologyID("topologyId", n) != nil }), nil
}

// logsOf lists a worker's logs, worker.log first, then its rotated files
// newest first: regular files only.
func (req *request) logsOf(w worker) []string {
	d, err := req.root.Open(w.rel())
	if err != nil {
		return nil
	}
	defer d.Close()
	entries, _ := d.ReadDir(-1)
	var names []string
	for _, e := range entries {
		if logName.MatchString(e.Name()) && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int { return rotation(a) - rotation(b) })
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = w.rel() + "/" + n
	}
	return out
}

// rotation is a log name's rotation number: 0 for worker.log.
func rotation(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(name, LogName), "."))
	return n
}
