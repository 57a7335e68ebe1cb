package testcluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// zkJar is installed by Debian's zookeeper package. Its manifest
	// Class-Path names its dependencies (zookeeper-jute, netty, slf4j-api...).
	zkJar = "/usr/share/java/zookeeper.jar"
	// zkClasspath adds the configuration directory and slf4j-simple, the
	// logging backend, which writes to stderr.
	zkClasspath = "/etc/zookeeper/conf:" + zkJar + ":/usr/share/java/slf4j-simple.jar"
	zkMain      = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	startTimeout = 30 * time.Second // until a started server reports a Mode
	stopTimeout  = 5 * time.Second  // from SIGTERM to SIGKILL
	readyPoll    = 25 * time.Millisecond
	logTailLines = 50
)

// jvmFlags make a small JVM that starts fast: a small heap and the serial
// GC, C1 only, no perf-data file, the CDS archive when there is one. Leader
// election retries at least every second rather than backing off to 60 s.
var jvmFlags = []string{
	"-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-Xshare:auto", "-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"-Dzookeeper.fastleader.maxNotificationInterval=1000",
	"-Dorg.slf4j.simpleLogger.showDateTime=true",
	"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
}

// ZooKeeper is one real server process, standalone or in an Ensemble, with
// its own temporary directory (configuration, data, log) and loopback port.
// It stops at the end of the test that started it.
type ZooKeeper struct {
	t    testing.TB
	name string // for messages: "zookeeper", or "zk1"... in an ensemble
	dir  string // zoo.cfg, data/, zookeeper.log
	addr string
	// probe is the TLS a client needs to ask the server anything, for a
	// server with no plaintext port (StartZooKeeperTLS); nil otherwise.
	probe *tls.Config

	mu      sync.Mutex // serialises Start, Stop, Pause and Resume
	cmd     *exec.Cmd  // nil when stopped
	paused  bool       // SIGSTOPped by Pause
	exited  chan struct{}
	exitErr error // set before exited is closed
}

// StartZooKeeper starts a standalone server and waits until it serves. It
// fails the test if ZooKeeper is not installed or does not start within 30 s;
// the server is stopped and its directory removed at t.Cleanup.
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	requireInstalled(t)
	z := newZooKeeper(t, "zookeeper", 0, FreePorts(t, 1)[0], nil)
	z.Start()
	return z
}

// newZooKeeper writes the configuration of server id (0 for a standalone
// server) with the ensemble's server lines, and registers its cleanup. It
// starts nothing.
func newZooKeeper(t testing.TB, name string, id, clientPort int, servers []string) *ZooKeeper {
	t.Helper()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	if id > 0 {
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
			t.Fatalf("testcluster: %v", err)
		}
	}
	cfg := []string{
		"tickTime=500",            // sessions from 1 s ...
		"maxSessionTimeout=60000", // ... to 60 s: Storm's default 20 s is granted as asked
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + dataDir,
		"clientPort=" + strconv.Itoa(clientPort),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"maxClientCnxns=0", // no cap per address: load tools open thousands of sessions from 127.0.0.1
		"forceSync=no",     // data survives the process, which is all tests need
	}
	cfg = append(cfg, servers...)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	z := &ZooKeeper{t: t, name: name, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	t.Cleanup(z.cleanup)
	return z
}

// Addr returns the client address, "127.0.0.1:port". It does not change
// across Stop and Start.
func (z *ZooKeeper) Addr() string { return z.addr }

// Pid is the server's process id (its JVM), 0 while it is stopped: for a
// benchmark that measures what ZooKeeper's own CPU costs.
func (z *ZooKeeper) Pid() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cmd == nil {
		return 0
	}
	return z.cmd.Process.Pid
}

// Start starts the stopped server again with the same data directory and
// port, and waits until it serves: for an ensemble member, until it has
// joined a quorum (see Ensemble.StartAll). It fails the test if the server is
// running, exits, or does not serve within 30 s.
func (z *ZooKeeper) Start() {
	z.t.Helper()
	if err := z.launch(); err != nil {
		z.t.Fatalf("testcluster: start %s: %v", z.name, err)
	}
	if err := z.waitReady(); err != nil {
		z.t.Fatalf("testcluster: %v", err)
	}
}

// Stop sends SIGTERM to the server's process group and waits for the process
// to exit, sending SIGKILL after 5 s. It returns at once if the server is not
// running.
func (z *ZooKeeper) Stop() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cmd == nil {
		return
	}
	pid := z.cmd.Process.Pid
	z.resumeLocked() // a stopped JVM would not act on SIGTERM
	select {
	case <-z.exited: // already gone: its group may be too
	default:
		signalGroup(pid, syscall.SIGTERM)
		select {
		case <-z.exited:
		case <-time.After(stopTimeout):
			signalGroup(pid, syscall.SIGKILL)
			<-z.exited
		}
	}
	z.cmd, z.exited = nil, nil
}

// Pause stops the server's process group with SIGSTOP: its connections
// stay open and accept bytes, but nothing answers, as with a server stuck
// in a long GC pause or a frozen VM. Clients notice only when their
// receive timeout (2/3 of the session timeout) passes. Resume undoes it;
// Stop and the test's cleanup resume a paused server first. It fails the
// test if the server is not running.
func (z *ZooKeeper) Pause() {
	z.t.Helper()
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cmd == nil {
		z.t.Fatalf("testcluster: pause %s: not running", z.name)
	}
	signalGroup(z.cmd.Process.Pid, syscall.SIGSTOP)
	z.paused = true
}

// Resume continues a server Pause stopped (SIGCONT to its process group).
// It returns at once; the server answers what queued meanwhile.
func (z *ZooKeeper) Resume() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.resumeLocked()
}

// resumeLocked sends SIGCONT if the server is paused; z.mu is held.
func (z *ZooKeeper) resumeLocked() {
	if z.cmd == nil || !z.paused {
		return
	}
	signalGroup(z.cmd.Process.Pid, syscall.SIGCONT)
	z.paused = false
}

// Mode asks the server with the four-letter word srvr and returns its mode:
// "standalone", "leader" or "follower". It fails if the server does not
// answer within 2 s or is not serving (for instance without a quorum).
func (z *ZooKeeper) Mode() (string, error) {
	mode, err := srvrMode(z.addr, z.probe)
	if err != nil {
		return "", fmt.Errorf("testcluster: %s at %s: %w", z.name, z.addr, err)
	}
	return mode, nil
}

// launch starts the process; it does not wait.
func (z *ZooKeeper) launch() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cmd != nil {
		return errors.New("already running")
	}
	logFile, err := os.OpenFile(z.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	classpath := zkClasspath
	if z.probe != nil {
		classpath += ":" + zkTLSClasspath
	}
	args := append(append([]string{}, jvmFlags...), "-cp", classpath, zkMain, filepath.Join(z.dir, "zoo.cfg"))
	cmd := exec.Command("java", args...)
	cmd.Dir = z.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		z.exitErr = cmd.Wait()
		close(exited)
	}()
	z.cmd, z.exited = cmd, exited
	return nil
}

// waitReady polls Mode until the server answers with one, fails early if
// the process exits.
func (z *ZooKeeper) waitReady() error {
	z.mu.Lock()
	exited := z.exited
	z.mu.Unlock()
	if exited == nil {
		return fmt.Errorf("%s is not running", z.name)
	}
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		_, err := z.Mode()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before serving (%v); see its log %s", z.name, z.exitErr, z.logPath())
		case <-deadline.C:
			return fmt.Errorf("%s not serving after %v: %w", z.name, startTimeout, err)
		case <-tick.C:
		}
	}
}

func (z *ZooKeeper) running() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.cmd != nil
}

func (z *ZooKeeper) logPath() string { return filepath.Join(z.dir, "zookeeper.log") }

// cleanup stops the server and, if the test failed, logs the tail of its log.
func (z *ZooKeeper) cleanup() {
	z.Stop()
	if !z.t.Failed() {
		return
	}
	lines, err := tail(z.logPath(), logTailLines)
	if errors.Is(err, os.ErrNotExist) {
		return // never started
	}
	if err != nil {
		z.t.Logf("testcluster: %s log: %v", z.name, err)
		return
	}
	z.t.Logf("testcluster: %s (%s) log, last %d lines:\n%s", z.name, z.addr, len(lines), strings.Join(lines, "\n"))
}

// srvrMode sends srvr to addr and returns the value of the Mode line.
func srvrMode(addr string, probe *tls.Config) (string, error) {
	var conn net.Conn
	var err error
	if probe != nil {
		conn, err = tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, probe)
	} else {
		conn, err = net.DialTimeout("tcp", addr, time.Second)
	}
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", err
	}
	// Stop at the Mode line rather than at EOF: a server that is starting
	// may fail to close the connection.
	var first string
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if mode, ok := strings.CutPrefix(line, "Mode:"); ok {
			return strings.TrimSpace(mode), nil
		}
		if first == "" {
			first = line
		}
		if strings.Contains(line, "not currently serving") {
			break
		}
	}
	if err := sc.Err(); err != nil && first == "" {
		return "", err
	}
	return "", fmt.Errorf("not serving: %q", first)
}

// requireInstalled fails the test when ZooKeeper or Java is missing.
func requireInstalled(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(zkJar); err != nil {
		t.Fatalf("testcluster: ZooKeeper is not installed (%v); run `make test`, which installs it with scripts/install-test-deps.sh", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("testcluster: no Java runtime (%v); run `make test`, which installs one with scripts/install-test-deps.sh", err)
	}
}

// signalGroup signals the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
