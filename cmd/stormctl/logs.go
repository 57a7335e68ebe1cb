package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// stormctl logs: a topology's worker logs, read from the logviewer of
// each worker's supervisor (its log_link) with this user's own TLS
// identity, as the nimbuses are called. Which workers, and where, any
// nimbus says (GetTopologyInfo).

// maxGrepLen bounds --grep: RE2 runs in linear time, and a pattern this
// long is not a search anyone types.
const maxGrepLen = 1024

func newLogsCommand(g *globals) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs TOPOLOGY",
		Short: "Print a topology's worker logs from the supervisors' logviewers (-f follows)",
		Long: `Print the end of the log of each worker of TOPOLOGY (--bytes of it), read
from the logviewer of the supervisor it runs on, with this client's
certificate: its owner, topology.users, logs.users and nimbus.admins may.
-f follows the logs as they grow, across rotations, until interrupted (or
for --timeout, if given).`,
		Example: `  stormctl logs wordcount
  stormctl logs wordcount --worker 10.0.0.5:6700 -f
  stormctl logs wordcount --grep 'ERROR|WARN'`,
		Args: exactArgs("TOPOLOGY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			timeout := g.timeout
			if o.follow && !g.timeoutSet {
				timeout = 0 // until interrupted
			}
			return g.withClientTimeout(cmd.Context(), timeout, func(ctx context.Context, c *client.Client) error {
				return printLogs(ctx, g, c, args[0], o)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.worker, "worker", "", "only the worker on HOST:PORT")
	f.BoolVarP(&o.follow, "follow", "f", false, "follow the logs as they grow, until interrupted")
	f.StringVar(&o.grep, "grep", "", "only the lines that match this regular expression (RE2)")
	f.Int64Var(&o.bytes, "bytes", 64<<10, "how much of the end of each log to print first (0: all of worker.log)")
	f.DurationVar(&o.every, "interval", time.Second, "how often -f asks for more")
	return cmd
}

type logsOptions struct {
	worker string
	follow bool
	grep   string
	re     *regexp.Regexp
	bytes  int64
	every  time.Duration
}

// check reads the flags; a bad one is a usage error naming it.
func (o *logsOptions) check() error {
	if o.grep != "" {
		if len(o.grep) > maxGrepLen {
			return &usageError{fmt.Errorf("--grep: at most %d bytes, got %d", maxGrepLen, len(o.grep))}
		}
		re, err := regexp.Compile(o.grep)
		if err != nil {
			return &usageError{fmt.Errorf("--grep: %v", err)}
		}
		o.re = re
	}
	if o.worker != "" {
		if _, _, err := net.SplitHostPort(o.worker); err != nil {
			return &usageError{fmt.Errorf("--worker: %q is not HOST:PORT", o.worker)}
		}
	}
	if o.bytes < 0 {
		return &usageError{fmt.Errorf("--bytes: %d is negative", o.bytes)}
	}
	if o.every <= 0 {
		return &usageError{fmt.Errorf("--interval: %v is not positive", o.every)}
	}
	return nil
}

// printLogs prints the logs of the topology's workers, and follows them
// with -f until ctx ends.
func printLogs(ctx context.Context, g *globals, c *client.Client, name string, o logsOptions) error {
	info, err := c.GetTopologyInfo(ctx, name)
	if err != nil {
		return &opError{op: "logs " + name, err: err}
	}
	workers, err := pickWorkers(info, o.worker)
	if err != nil {
		return &opError{op: "logs " + name, err: err}
	}
	lv, err := newLogviewerClient(g)
	if err != nil {
		return err
	}
	var tails []*logTail
	for _, wk := range workers {
		t := &logTail{lv: lv, link: wk.GetLogLink(), prefix: "", re: o.re, out: g.stdout}
		if len(workers) > 1 {
			t.prefix = hostPort(wk.GetHost(), wk.GetPort()) + " | "
		}
		if t.link == "" {
			fmt.Fprintf(g.stderr, "%s: its supervisor serves no logs (logviewer.port -1)\n", hostPort(wk.GetHost(), wk.GetPort()))
			continue
		}
		if err := t.start(ctx, o.bytes); err != nil {
			return &opError{op: "logs " + name + " " + hostPort(wk.GetHost(), wk.GetPort()), err: err}
		}
		tails = append(tails, t)
	}
	if !o.follow {
		for _, t := range tails {
			t.flush()
		}
		return nil
	}
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, t := range tails {
				t.flush()
			}
			// Interrupted, or --timeout passed: the ways -f ends.
			return nil
		case <-tick.C:
		}
		for _, t := range tails {
			if err := t.more(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(g.stderr, "%s%v\n", t.prefix, err) // a supervisor away: try again
			}
		}
	}
}

// pickWorkers is the topology's workers, or the one on HOST:PORT.
func pickWorkers(info *nimbusv1.GetTopologyInfoResponse, worker string) ([]*nimbusv1.WorkerSummary, error) {
	all := info.GetWorkers()
	if worker == "" {
		if len(all) == 0 {
			return nil, fmt.Errorf("no workers are assigned yet")
		}
		return all, nil
	}
	var names []string
	for _, wk := range all {
		hp := hostPort(wk.GetHost(), wk.GetPort())
		if hp == worker {
			return []*nimbusv1.WorkerSummary{wk}, nil
		}
		names = append(names, hp)
	}
	return nil, fmt.Errorf("--worker: no worker of the topology on %s (its workers: %s)", worker, strings.Join(names, ", "))
}

// logviewerClient reads from logviewers, over TLS with this client's
// certificate when TLS is on, each server verified for its own host.
type logviewerClient struct{ http *http.Client }

func newLogviewerClient(g *globals) (*logviewerClient, error) {
	if err := g.defaultConfig(); err != nil {
		return nil, err
	}
	cfg, _, err := configs.Load(g.flags)
	if err != nil {
		return nil, &usageError{err}
	}
	tlsm, err := certs.FromConfig(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{Proxy: nil, ResponseHeaderTimeout: 30 * time.Second, MaxIdleConnsPerHost: 4}
	if tlsm != nil {
		tr.DialTLSContext = tlsm.DialTLSContext
	}
	return &logviewerClient{http: &http.Client{Transport: tr}}, nil
}

// page is one answer of /api/v1/log.
type page struct {
	data       []byte
	next, size int64
	id         string // the file it was read from (logviewerFileID)
}

// logviewerFileID is the header that names the file a page was read from
// (logviewer.FileIDHeader): another name at the same path is a rotation.
const logviewerFileID = "X-Log-File-Id"

// statusError is a logviewer's refusal.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// isNotFound reports whether err is the logviewer's 404: no such file.
func isNotFound(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == http.StatusNotFound
}

// read asks the logviewer for length bytes of file from start (the last
// length bytes with start -1).
func (lv *logviewerClient) read(ctx context.Context, link, file string, start, length int64) (page, error) {
	u, err := url.Parse(link)
	if err != nil {
		return page{}, fmt.Errorf("log link %q: %w", link, err)
	}
	q := url.Values{"file": {file}, "length": {strconv.FormatInt(length, 10)}}
	if start >= 0 {
		q.Set("start", strconv.FormatInt(start, 10))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return page{}, err
	}
	resp, err := lv.http.Do(req)
	if err != nil {
		return page{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, logviewerMaxLength+1))
	if err != nil {
		return page{}, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			ErrorMessage string `json:"errorMessage"`
		}
		if json.Unmarshal(body, &e) == nil && e.ErrorMessage != "" {
			return page{}, &statusError{resp.StatusCode, resp.Status + ": " + e.ErrorMessage}
		}
		return page{}, &statusError{resp.StatusCode, resp.Status}
	}
	p := page{data: body, id: resp.Header.Get(logviewerFileID)}
	p.next, _ = strconv.ParseInt(resp.Header.Get("X-Log-Next"), 10, 64)
	p.size, _ = strconv.ParseInt(resp.Header.Get("X-Log-File-Size"), 10, 64)
	return p, nil
}

// logviewerMaxLength is the most a logviewer answers at once
// (logviewer.MaxLength).
const logviewerMaxLength = 1 << 20

// maxLineBytes bounds what is held of one line: a longer line is printed
// in pieces of this size, so that a worker that never ends a line cannot
// fill this process's memory.
const maxLineBytes = 1 << 20

// maxRotated bounds the rotated files looked through for a log that
// rotated away (worker.log.1 to .999: the names a logviewer serves).
const maxRotated = 999

// logTail prints one worker's log and follows it. It reads one file at a
// time by offsets, and knows the file by the identity the logviewer
// gives it (logviewerFileID), so that a rotation is seen whatever the new
// file's size.
type logTail struct {
	lv       *logviewerClient
	link     string // its log_link: the logviewer and the file
	prefix   string
	re       *regexp.Regexp
	out      io.Writer
	file     string // <topology>/<port>/worker.log
	id       string // the file being read; "" when the logviewer names none
	offset   int64  // how far that file has been printed
	partial  []byte // a line not ended yet
	skipping bool   // dropping the rest of a line cut by the start
}

// start prints the last n bytes of the worker's log (all of it for 0),
// from the first whole line, page by page as it reads them.
func (t *logTail) start(ctx context.Context, n int64) error {
	u, err := url.Parse(t.link)
	if err != nil {
		return fmt.Errorf("log link %q: %w", t.link, err)
	}
	t.file = u.Query().Get("file")
	first, err := t.lv.read(ctx, t.link, t.file, 0, 1) // its size and identity
	if err != nil {
		return err
	}
	t.id = first.id
	if n > 0 {
		t.offset = max(first.size-n, 0)
	}
	t.skipping = t.offset > 0 // cut inside a line: start at the next
	_, err = t.readRest(ctx, t.file, first.size)
	return err
}

// readRest prints name, the file being read (t.id), from t.offset to end
// (to its end as it grows, for end -1), a page at a time. It reports
// false when name is no longer that file: it was rotated away meanwhile.
func (t *logTail) readRest(ctx context.Context, name string, end int64) (bool, error) {
	for end < 0 || t.offset < end {
		length := int64(logviewerMaxLength)
		if end >= 0 {
			length = min(end-t.offset, length)
		}
		p, err := t.lv.read(ctx, t.link, name, t.offset, length)
		if err != nil {
			return false, err
		}
		switch {
		case p.id != t.id || (t.id == "" && p.size < t.offset): // another file (by size, for a logviewer that names none)
			return false, nil
		case p.size < t.offset: // the same file, cut
			t.gap()
			t.offset = 0
			continue
		}
		t.offset += int64(len(p.data))
		t.add(p.data)
		if len(p.data) == 0 || p.next >= p.size {
			return true, nil
		}
	}
	return true, nil
}

// more prints what the log gained since the last look. When worker.log is
// another file than the one read (rotated), the rest of the old one comes
// first, wherever it went, then every newer rotated file, then the new
// worker.log.
func (t *logTail) more(ctx context.Context) error {
	for range maxRotated + 1 { // each pass follows one rotation
		same, err := t.readRest(ctx, t.file, -1)
		if err != nil || same {
			return err
		}
		if err := t.rotated(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rotated catches up with the files worker.log became since the last
// look, oldest first, and leaves the tail on the current worker.log. A
// file gone before it was read (the cap deleted it) is said: lines are
// missing.
func (t *logTail) rotated(ctx context.Context) error {
	if t.id == "" { // a logviewer that names no file: by size, from the start
		t.gap()
		t.offset = 0
		return nil
	}
	for range maxRotated + 1 {
		at, files, err := t.locate(ctx, t.id)
		if err != nil {
			return err
		}
		if at < 0 { // gone: go on from the oldest file there is
			t.gap()
			at = len(files) - 1
			t.id, t.offset = files[at], 0
		}
		if at == 0 {
			return nil // worker.log: more reads it
		}
		if done, err := t.readRest(ctx, t.rotatedName(at), -1); err != nil || !done {
			if err != nil && !isNotFound(err) {
				return err
			}
			continue // moved meanwhile: look again
		}
		// The next newer file is the one just before it now.
		at, files, err = t.locate(ctx, t.id)
		if err != nil {
			return err
		}
		if at <= 0 {
			continue
		}
		t.flushLine()
		t.id, t.offset = files[at-1], 0
	}
	return nil
}

// rotatedName is the name of worker.log's n-th file: worker.log itself
// for 0, worker.log.n after.
func (t *logTail) rotatedName(n int) string {
	if n == 0 {
		return t.file
	}
	return t.file + "." + strconv.Itoa(n)
}

// locate finds the file id among worker.log (0) and its rotated files
// (n), reading the identity of each up to it; it returns its index, -1
// when it is gone, and the identities read, by index.
func (t *logTail) locate(ctx context.Context, id string) (int, []string, error) {
	var files []string
	for n := 0; n <= maxRotated; n++ {
		p, err := t.lv.read(ctx, t.link, t.rotatedName(n), 0, 1)
		if isNotFound(err) && n > 0 {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		files = append(files, p.id)
		if p.id == id {
			return n, files, nil
		}
	}
	return -1, files, nil
}

// gap says that lines went unread between two files.
func (t *logTail) gap() {
	t.flushLine()
	fmt.Fprintf(t.out, "%s... (the log rotated more than its files kept since the last look: lines are missing)\n", t.prefix)
}

// add takes a page read: its whole lines are printed, the rest held.
func (t *logTail) add(data []byte) {
	if t.skipping {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return
		}
		t.skipping, data = false, data[i+1:]
	}
	t.partial = append(t.partial, data...)
	t.emit()
}

// emit prints the whole lines held, those that match --grep, and a line
// longer than maxLineBytes in pieces of that size.
func (t *logTail) emit() {
	rest := t.partial
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		t.line(rest[:i])
		rest = rest[i+1:]
	}
	for len(rest) > maxLineBytes {
		t.line(rest[:maxLineBytes])
		rest = rest[maxLineBytes:]
	}
	t.partial = append(t.partial[:0], rest...)
}

// flushLine prints a line held that its file ended without ending: the
// next file starts a line of its own.
func (t *logTail) flushLine() {
	t.emit()
	if len(t.partial) > 0 {
		t.line(t.partial)
		t.partial = t.partial[:0]
	}
}

// flush prints a last line that has no end yet.
func (t *logTail) flush() { t.flushLine() }

func (t *logTail) line(s []byte) {
	if t.re != nil && !t.re.Match(s) {
		return
	}
	fmt.Fprintf(t.out, "%s%s\n", t.prefix, s)
}

// fillLogTails gives each worker of info that has a log link the last
// lines of its log, read from its logviewer: what `topology --logs`
// shows. A worker whose logviewer does not answer keeps none, and says
// why on stderr.
func fillLogTails(ctx context.Context, g *globals, info *nimbusv1.GetTopologyInfoResponse) {
	lv, err := newLogviewerClient(g)
	if err != nil {
		fmt.Fprintf(g.stderr, "logs: %v\n", err)
		return
	}
	for _, wk := range info.GetWorkers() {
		if wk.GetLogTail() != "" || wk.GetLogLink() == "" {
			continue
		}
		var buf bytes.Buffer
		t := &logTail{lv: lv, link: wk.GetLogLink(), out: &buf}
		if err := t.start(ctx, 2<<10); err != nil {
			fmt.Fprintf(g.stderr, "logs of %s: %v\n", hostPort(wk.GetHost(), wk.GetPort()), err)
			continue
		}
		t.flush()
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		wk.LogTail = strings.Join(lines[max(len(lines)-10, 0):], "\n")
	}
}
