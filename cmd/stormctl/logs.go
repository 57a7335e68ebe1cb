package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
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
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, tlsm.ClientConfig(host))
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return conn, nil
		}
	}
	return &logviewerClient{http: &http.Client{Transport: tr}}, nil
}

// page is one answer of /api/v1/log.
type page struct {
	data       []byte
	next, size int64
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
			return page{}, fmt.Errorf("%s: %s", resp.Status, e.ErrorMessage)
		}
		return page{}, fmt.Errorf("%s", resp.Status)
	}
	p := page{data: body}
	p.next, _ = strconv.ParseInt(resp.Header.Get("X-Log-Next"), 10, 64)
	p.size, _ = strconv.ParseInt(resp.Header.Get("X-Log-File-Size"), 10, 64)
	return p, nil
}

// logviewerMaxLength is the most a logviewer answers at once
// (logviewer.MaxLength).
const logviewerMaxLength = 1 << 20

// logTail prints one worker's log and follows it.
type logTail struct {
	lv      *logviewerClient
	link    string // its log_link: the logviewer and the file
	prefix  string
	re      *regexp.Regexp
	out     io.Writer
	file    string // <topology>/<port>/worker.log
	offset  int64  // how far worker.log has been printed
	partial []byte // a line not ended yet
}

// start prints the last n bytes of the worker's log (all of it for 0),
// from the first whole line.
func (t *logTail) start(ctx context.Context, n int64) error {
	u, err := url.Parse(t.link)
	if err != nil {
		return fmt.Errorf("log link %q: %w", t.link, err)
	}
	t.file = u.Query().Get("file")
	first, err := t.lv.read(ctx, t.link, t.file, 0, 1) // its size
	if err != nil {
		return err
	}
	from := int64(0)
	if n > 0 {
		from = max(first.size-n, 0)
	}
	t.offset = from
	if err := t.readTo(ctx, first.size); err != nil {
		return err
	}
	if from > 0 { // cut inside a line: start at the next
		if i := bytes.IndexByte(t.partial, '\n'); i >= 0 {
			t.partial = t.partial[i+1:]
		}
	}
	t.emit()
	return nil
}

// readTo reads worker.log from offset up to end into partial.
func (t *logTail) readTo(ctx context.Context, end int64) error {
	for t.offset < end {
		p, err := t.lv.read(ctx, t.link, t.file, t.offset, min(end-t.offset, logviewerMaxLength))
		if err != nil {
			return err
		}
		if len(p.data) == 0 {
			return nil
		}
		t.partial = append(t.partial, p.data...)
		t.offset += int64(len(p.data))
	}
	return nil
}

// more prints what the log gained since the last look. A log smaller than
// what was printed was rotated: the rest of the file it became
// (worker.log.1) comes first, then the new one from its start.
func (t *logTail) more(ctx context.Context) error {
	for {
		p, err := t.lv.read(ctx, t.link, t.file, t.offset, logviewerMaxLength)
		if err != nil {
			return err
		}
		if p.size < t.offset {
			t.rotated(ctx)
			continue
		}
		if len(p.data) == 0 {
			return nil
		}
		t.partial = append(t.partial, p.data...)
		t.offset += int64(len(p.data))
		t.emit()
		if p.next >= p.size {
			return nil
		}
	}
}

// rotated reads the rest of worker.log.1, which worker.log became, and
// starts over on the new worker.log.
func (t *logTail) rotated(ctx context.Context) {
	old := t.file + ".1"
	for {
		p, err := t.lv.read(ctx, t.link, old, t.offset, logviewerMaxLength)
		if err != nil || len(p.data) == 0 {
			break
		}
		if p.size < t.offset {
			fmt.Fprintf(t.out, "%s... (rotated more than once since the last look: lines are missing)\n", t.prefix)
			break
		}
		t.partial = append(t.partial, p.data...)
		t.offset += int64(len(p.data))
		if p.next >= p.size {
			break
		}
	}
	t.emit()
	t.offset = 0
}

// emit prints the whole lines read, those that match --grep.
func (t *logTail) emit() {
	i := bytes.LastIndexByte(t.partial, '\n')
	if i < 0 {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(t.partial[:i+1]))
	sc.Buffer(make([]byte, 0, 64<<10), logviewerMaxLength+1)
	for sc.Scan() {
		t.line(sc.Text())
	}
	t.partial = append(t.partial[:0], t.partial[i+1:]...)
}

// flush prints a last line that has no end yet.
func (t *logTail) flush() {
	t.emit()
	if len(t.partial) > 0 {
		t.line(string(t.partial))
		t.partial = t.partial[:0]
	}
}

func (t *logTail) line(s string) {
	if t.re != nil && !t.re.MatchString(s) {
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
