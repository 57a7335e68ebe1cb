package testcluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one daemon (nimbus or supervisor) that a Cluster started from
// its binary, in a process group of its own. Its stdout and stderr (JSON
// log lines) go to LogPath; its ready line (readyline.go) gives its
// addresses and id.
type Process struct {
	Name     string
	LogPath  string
	LocalDir string // storm.local.dir, for daemons that have one
	// Identity is the daemon's TLS certificate in a Cluster WithSecurity;
	// the zero Identity otherwise.
	Identity Identity

	metricsTLS *tls.Config // non-nil: the metrics port speaks HTTPS
	supervisor bool        // its keepers outlive it (Cluster.Close ends them)

	cmd    *exec.Cmd
	ready  chan struct{}
	exited chan struct{}

	mu          sync.Mutex
	isReady     bool
	addr        string
	metricsAddr string
	uiAddr      string
	id          string
	torrentAddr string
	exitErr     error
}

// ID is the daemon's id from its ready line (supervisors).
func (p *Process) ID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id
}

// startProcess runs bin with args and env added to the test's environment;
// output goes to logPath. It does not wait for the ready line.
func startProcess(name, bin, logPath string, args []string, env []string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		p.scan(stderr, logFile)
	}()
	go func() {
		<-copied // Wait must follow the last read of the pipe
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// scan copies log lines to w and records what the ready line and the
// BitTorrent line say (readyline.go).
func (p *Process) scan(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		w.Write(append(line, '\n'))
		entry, ok := parseLogLine(line)
		switch {
		case !ok:
		case entry.torrent():
			p.mu.Lock()
			p.torrentAddr = entry.Addr
			p.mu.Unlock()
		case entry.ready():
			p.mu.Lock()
			first := !p.isReady
			p.isReady = true
			p.addr, p.metricsAddr, p.uiAddr, p.id = entry.Addr, entry.Metrics, entry.UI, entry.ID
			p.mu.Unlock()
			if first {
				close(p.ready)
			}
		}
	}
}

// WaitReady blocks until the ready line, and returns nil, or until the
// process exits or timeout passes, and returns an error with the tail of
// its log.
func (p *Process) WaitReady(timeout time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return fmt.Errorf("%s exited before it was ready: %v\n%s", p.Name, p.ExitErr(), p.Tail(30))
	case <-time.After(timeout):
		return fmt.Errorf("%s not ready after %v\n%s", p.Name, timeout, p.Tail(30))
	}
}

// Addr is the gRPC address from the ready line.
func (p *Process) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// MetricsAddr is the metrics address from the ready line.
func (p *Process) MetricsAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.metricsAddr
}

// UIURL is the base URL of a nimbus's REST API and web UI (ui.port), from
// its ready line: https in a Cluster WithSecurity.
func (p *Process) UIURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	scheme := "http"
	if p.metricsTLS != nil {
		scheme = "https"
	}
	return scheme + "://" + p.uiAddr
}

// Metrics fetches the daemon's Prometheus metrics page, waiting up to 5 s;
// over HTTPS, trusting the Cluster's CA, in a Cluster WithSecurity.
func (p *Process) Metrics() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	scheme, hc := "http", http.DefaultClient
	if p.metricsTLS != nil {
		scheme = "https"
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: p.metricsTLS}}
		defer hc.CloseIdleConnections()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+p.MetricsAddr()+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TorrentAddr is the address its BitTorrent peer listens on, with
// storm.codedistributor.class bittorrent; "" otherwise.
func (p *Process) TorrentAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.torrentAddr
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// ExitErr is the error of Wait once the process exited.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Stop sends SIGCONT (a stopped process cannot handle sig) and sig, and
// waits up to timeout for the exit; then it SIGKILLs the process group,
// waits for the exit and returns an error saying so. It returns at once if
// the process has exited.
func (p *Process) Stop(sig syscall.Signal, timeout time.Duration) error {
	if !p.Running() {
		return nil
	}
	_ = p.Signal(syscall.SIGCONT) // a stopped process cannot handle sig
	_ = p.Signal(sig)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.exited
		return errors.New(p.Name + " did not exit in time; killed")
	}
}

// Addrs returns the gRPC addresses of ps, a client's seeds.
func Addrs(ps ...*Process) []string {
	addrs := make([]string, len(ps))
	for i, p := range ps {
		addrs[i] = p.Addr()
	}
	return addrs
}

// Tail returns the last n lines of the log, or the error reading it.
func (p *Process) Tail(n int) string {
	lines, err := tail(p.LogPath, n)
	if err != nil {
		return err.Error()
	}
	return strings.Join(lines, "\n")
}
