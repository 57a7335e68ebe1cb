package testcluster

// HDFS: a real NameNode and DataNode, Hadoop's own jars from Maven Central,
// each a java process in its own process group, bound to 127.0.0.1. The jars
// are fetched once, outside the repository, by scripts/install-test-deps.sh
// (mvn dependency:copy-dependencies on internal/testkit/testcluster/hdfs/pom.xml) into
// $NIMBUS_HDFS_JARS, by default ~/.cache/nimbus/hdfs-<hdfsVersion>.

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// HDFSUser is the user the readiness check acts as, and the one the servers
// run as (HADOOP_USER_NAME), so it is the HDFS superuser. Permissions are off:
// any user may do anything.
const HDFSUser = "nimbus"

const (
	// hdfsVersion must equal hadoop.version in hdfs/pom.xml (a test checks).
	hdfsVersion    = "3.4.3"
	hdfsJarsEnv    = "NIMBUS_HDFS_JARS"
	hdfsJarsMarker = ".fetched" // written by install-test-deps.sh once all jars are there

	hdfsNameNodeMain = "org.apache.hadoop.hdfs.server.namenode.NameNode"
	hdfsDataNodeMain = "org.apache.hadoop.hdfs.server.datanode.DataNode"

	hdfsFormatTimeout = 60 * time.Second
	hdfsReadyTimeout  = 90 * time.Second // from launch until a file can be written and read
	hdfsProbeTimeout  = 15 * time.Second // one readiness attempt
	hdfsDialTimeout   = 2 * time.Second
	hdfsReadyPoll     = 100 * time.Millisecond
	hdfsReadyDir      = "/.testcluster-ready"
)

// hdfsJVMFlags: a small, fast-starting JVM as for ZooKeeper, and the
// --add-opens that Hadoop 3.4 on Java 17 is run with. The tests here log no
// access errors without them; they are for the paths they do not reach.
var hdfsJVMFlags = []string{
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/java.util.zip=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/sun.security.util=ALL-UNNAMED",
	"--add-opens=java.base/sun.net.dns=ALL-UNNAMED",
	"--add-opens=java.base/sun.net.util=ALL-UNNAMED",
}

// HDFS is a one-DataNode cluster with its own temporary directory
// (configuration, metadata, blocks, logs) and loopback ports. It stops, and
// its directory is removed, at the end of the test that started it.
type HDFS struct {
	t         testing.TB
	dir       string // conf/, name/, data/, tmp/, logs/, namenode.log, datanode.log
	addr      string // NameNode RPC, fixed across restarts
	classpath string
	nn, dn    *javaProc
	stopped   atomic.Bool // by Stop: the cluster is not to be restarted
	probes    atomic.Int64
}

// StartHDFS formats a NameNode in a temporary directory, starts it and a
// DataNode, and waits until a client can write and read a file: the DataNode
// is live and safe mode is off, which, here, means every block is reported. It fails the test if the jars are not fetched,
// Java is missing, or HDFS is not ready within 90 s; both processes are
// stopped and the directory removed at t.Cleanup.
//
// The cluster: replication 1, permissions off, 16 MiB blocks, NameNode RPC at
// Addr; HTTP and DataNode ports are ephemeral.
func StartHDFS(t testing.TB) *HDFS {
	t.Helper()
	jars := requireHDFSInstalled(t)
	start := time.Now()
	dir, err := os.MkdirTemp("", "nimbus-hdfs-") // not t.TempDir: its name may hold '#', which breaks file: URIs
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	h := &HDFS{
		t:         t,
		dir:       dir,
		addr:      net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePorts(t, 1)[0])),
		classpath: filepath.Join(dir, "conf") + string(os.PathListSeparator) + filepath.Join(jars, "*"),
	}
	h.nn = &javaProc{name: "namenode", logPath: filepath.Join(dir, "namenode.log")}
	h.dn = &javaProc{name: "datanode", logPath: filepath.Join(dir, "datanode.log")}
	t.Cleanup(h.cleanup)
	if err := h.writeConf(); err != nil {
		t.Fatalf("testcluster: hdfs: %v", err)
	}
	// The DataNode retries until the NameNode serves: it boots while the
	// NameNode is formatted.
	if err := h.dn.start(h.dir, h.javaArgs(h.dn, "-Xmx256m", hdfsDataNodeMain)); err != nil {
		t.Fatalf("testcluster: hdfs: start datanode: %v", err)
	}
	if err := h.format(); err != nil {
		t.Fatalf("testcluster: hdfs: %v", err)
	}
	if err := h.nn.start(h.dir, h.javaArgs(h.nn, "-Xmx384m", hdfsNameNodeMain)); err != nil {
		t.Fatalf("testcluster: hdfs: start namenode: %v", err)
	}
	if err := h.waitReady(); err != nil {
		t.Fatalf("testcluster: hdfs: %v", err)
	}
	t.Logf("testcluster: HDFS ready at %s in %v", h.addr, time.Since(start).Round(time.Millisecond))
	return h
}

// Addr returns the NameNode RPC address, "127.0.0.1:port", for
// hdfs.ClientOptions.Addresses. It does not change across StopNameNode and
// StartNameNode.
func (h *HDFS) Addr() string { return h.addr }

// StopNameNode stops the NameNode (SIGTERM to its process group, SIGKILL after
// 5 s) and waits for it to exit; the DataNode keeps running. Client calls then
// fail at once (EOF, connection refused). It returns at once if the NameNode
// is stopped.
func (h *HDFS) StopNameNode() { h.nn.stop() }

// StartNameNode starts the stopped NameNode again on the same directories
// and port and waits, up to 90 s, until it is ready as StartHDFS does: the
// DataNode has re-registered and reported every block. It fails the test if the
// NameNode is running or the cluster was stopped with Stop.
//
// A client whose calls failed while the NameNode was down skips it for 5 s
// (colinmarc/hdfs backs off), so poll, or use a new client.
func (h *HDFS) StartNameNode() {
	h.t.Helper()
	if h.stopped.Load() {
		h.t.Fatalf("testcluster: hdfs: StartNameNode after Stop")
	}
	if err := h.nn.start(h.dir, h.javaArgs(h.nn, "-Xmx384m", hdfsNameNodeMain)); err != nil {
		h.t.Fatalf("testcluster: hdfs: start namenode: %v", err)
	}
	if err := h.waitReady(); err != nil {
		h.t.Fatalf("testcluster: hdfs: %v", err)
	}
}

// Stop stops the DataNode and the NameNode and waits for them to exit. The
// cluster cannot be started again; its directory stays until the cleanup.
func (h *HDFS) Stop() {
	h.stopped.Store(true)
	var wg sync.WaitGroup
	for _, p := range []*javaProc{h.dn, h.nn} {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// cleanup stops both servers, logs the tail of their logs if the test failed,
// and removes the directory.
func (h *HDFS) cleanup() {
	h.Stop()
	if h.t.Failed() {
		for _, p := range []*javaProc{h.nn, h.dn} {
			p.logTail(h.t, h.addr)
		}
	}
	if err := os.RemoveAll(h.dir); err != nil {
		h.t.Logf("testcluster: hdfs: %v", err)
	}
}

// format runs NameNode -format to completion, its output in namenode.log.
func (h *HDFS) format() error {
	p := &javaProc{name: "namenode -format", logPath: h.nn.logPath}
	if err := p.start(h.dir, h.javaArgs(p, "-Xmx256m", hdfsNameNodeMain, "-format", "-force", "-nonInteractive")); err != nil {
		return fmt.Errorf("format namenode: %w", err)
	}
	defer p.stop() // reaps, or kills it after a timeout
	r := p.current()
	select {
	case <-r.exited:
	case <-time.After(hdfsFormatTimeout):
		return fmt.Errorf("format namenode: not done after %v; see %s", hdfsFormatTimeout, p.logPath)
	}
	if r.err != nil {
		return fmt.Errorf("format namenode: %v; see %s", r.err, p.logPath)
	}
	return nil
}

// javaArgs returns the java command line of a server main (and its args).
func (h *HDFS) javaArgs(p *javaProc, heap, main string, args ...string) []string {
	logs := filepath.Join(h.dir, "logs")
	a := append([]string{"-Xms32m", heap}, hdfsJVMFlags...)
	a = append(a,
		"-Dproc_"+strings.Fields(p.name)[0], // names the process in ps
		"-Dhadoop.log.dir="+logs,
		"-Dhadoop.log.file="+filepath.Base(p.logPath),
		"-Dhadoop.home.dir="+h.dir,
		"-Dhadoop.id.str="+HDFSUser,
		"-cp", h.classpath,
		main)
	return append(a, args...)
}

// writeConf writes conf/ (first on the classpath: core-site.xml,
// hdfs-site.xml, log4j.properties, and the empty web app directories the HTTP
// servers look up) and the data directories.
func (h *HDFS) writeConf() error {
	conf := filepath.Join(h.dir, "conf")
	for _, d := range []string{"conf/webapps/hdfs", "conf/webapps/datanode", "conf/webapps/static", "name", "data", "tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(h.dir, d), 0o755); err != nil {
			return err
		}
	}
	any0 := "127.0.0.1:0"
	core := [][2]string{
		{"fs.defaultFS", "hdfs://" + h.addr},
		{"hadoop.tmp.dir", filepath.Join(h.dir, "tmp")},
		// Groups of HDFSUser without running `id`; other users get none.
		{"hadoop.user.group.static.mapping.overrides", "dr.who=;" + HDFSUser + "=supergroup"},
		// The DataNode reconnects to a restarted NameNode within a second.
		{"ipc.client.connect.retry.interval", "200"},
		{"ipc.client.connect.max.retries", "50"},
	}
	site := [][2]string{
		{"dfs.namenode.rpc-address", h.addr},
		{"dfs.namenode.http-address", any0},
		{"dfs.namenode.https-address", any0},
		{"dfs.namenode.secondary.http-address", any0},
		{"dfs.namenode.name.dir", "file://" + filepath.Join(h.dir, "name")},
		{"dfs.datanode.data.dir", "file://" + filepath.Join(h.dir, "data")},
		{"dfs.datanode.address", any0},
		{"dfs.datanode.http.address", any0},
		{"dfs.datanode.ipc.address", any0},
		{"dfs.datanode.hostname", "127.0.0.1"},
		{"dfs.namenode.datanode.registration.ip-hostname-check", "false"},
		{"dfs.replication", "1"},
		{"dfs.namenode.replication.min", "1"},
		{"dfs.blocksize", "16m"}, // the free disk a new block needs, not 128 MiB
		{"dfs.permissions.enabled", "false"},
		// Safe mode ends, at once, when a DataNode has reported every block:
		// the default 99.9% rounds down, to none of one block.
		{"dfs.namenode.safemode.threshold-pct", "1"},
		{"dfs.namenode.safemode.extension", "0"},
		{"dfs.namenode.safemode.min.datanodes", "1"},
		{"dfs.namenode.resource.du.reserved", strconv.Itoa(16 << 20)}, // free disk below which the NameNode enters safe mode, not 100 MiB
		{"dfs.heartbeat.interval", "1"},
		{"dfs.blockreport.initialDelay", "0"},
		{"dfs.namenode.edits.noeditlogchannelflush", "true"}, // no fsync: data outlives the process, not the machine
		{"dfs.datanode.scan.period.hours", "-1"},             // no block scanner
		{"dfs.datanode.du.reserved", "0"},
	}
	log4j := strings.Join([]string{
		"log4j.rootLogger=INFO,console",
		"log4j.appender.console=org.apache.log4j.ConsoleAppender",
		"log4j.appender.console.target=System.err",
		"log4j.appender.console.layout=org.apache.log4j.PatternLayout",
		"log4j.appender.console.layout.ConversionPattern=%d{HH:mm:ss,SSS} %p %c{1}: %m%n",
		"log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN",
		"log4j.logger.BlockStateChange=WARN",
		"log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR",
		"log4j.logger.org.apache.hadoop.security.authentication.server.AuthenticationFilter=ERROR",
		"",
	}, "\n")
	files := map[string][]byte{
		"core-site.xml":    hadoopXML(core),
		"hdfs-site.xml":    hadoopXML(site),
		"log4j.properties": []byte(log4j),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(conf, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// hadoopXML renders a Hadoop configuration file.
func hadoopXML(props [][2]string) []byte {
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, p := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", xmlEscape(p[0]), xmlEscape(p[1]))
	}
	b.WriteString("</configuration>\n")
	return b.Bytes()
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// waitReady polls probe until it succeeds, failing early if a server exits.
func (h *HDFS) waitReady() error {
	nn, dn := h.nn.current(), h.dn.current()
	if nn == nil || dn == nil {
		return errors.New("namenode or datanode is not running")
	}
	deadline := time.Now().Add(hdfsReadyTimeout)
	for {
		err := h.probe(min(hdfsProbeTimeout, time.Until(deadline)))
		if err == nil {
			return nil
		}
		select {
		case <-nn.exited:
			return fmt.Errorf("namenode exited before HDFS was ready (%v); see %s", nn.err, h.nn.logPath)
		case <-dn.exited:
			return fmt.Errorf("datanode exited before HDFS was ready (%v); see %s", dn.err, h.dn.logPath)
		case <-time.After(hdfsReadyPoll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", hdfsReadyTimeout, err)
		}
	}
}

// probe writes a small file under /.testcluster-ready with a new client, reads it
// back and removes the directory. A NameNode in safe mode refuses the create;
// without a live DataNode the write fails. The attempt is cut off after
// timeout by closing its connections.
func (h *HDFS) probe(timeout time.Duration) error {
	d := &closingDialer{}
	done := make(chan error, 1)
	go func() { done <- h.probeWith(d) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		d.closeAll() // unblocks the attempt, which returns soon
		<-done
		return fmt.Errorf("readiness check took longer than %v", timeout)
	}
}

func (h *HDFS) probeWith(d *closingDialer) error {
	c, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses:        []string{h.addr},
		User:             HDFSUser,
		NamenodeDialFunc: d.DialContext,
		DatanodeDialFunc: d.DialContext,
	})
	if err != nil {
		return err
	}
	defer c.Close()
	name := fmt.Sprintf("%s/%d", hdfsReadyDir, h.probes.Add(1))
	want := []byte("ready " + name)
	if err := c.MkdirAll(hdfsReadyDir, 0o755); err != nil {
		return err
	}
	w, err := c.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(want); err != nil {
		w.Close()
		return err
	}
	if err := closeHDFSFile(w, hdfsProbeTimeout); err != nil {
		return err
	}
	got, err := c.ReadFile(name)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("read %q from %s, wrote %q", got, name, want)
	}
	return c.RemoveAll(hdfsReadyDir)
}

// closeHDFSFile closes w, again while it fails with hdfs.ErrReplicating,
// for up to timeout. A NameNode refuses to complete a file until a DataNode
// has reported its last block, which often comes just after the client's
// close: real HDFS clients retry (Java's with a backoff); colinmarc/hdfs
// leaves it to the caller.
func closeHDFSFile(w *hdfs.FileWriter, timeout time.Duration) error {
	var err error
	_ = poll(timeout, PollInterval, func() error {
		err = w.Close()
		if errors.Is(err, hdfs.ErrReplicating) {
			return err // again
		}
		return nil // done, with err
	})
	return err
}

// closingDialer dials with a timeout and remembers its connections, so that
// closeAll can break off whatever is using them; it refuses to dial after.
type closingDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func (d *closingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: hdfsDialTimeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		conn.Close()
		return nil, net.ErrClosed
	}
	d.conns = append(d.conns, conn)
	return conn, nil
}

func (d *closingDialer) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// hdfsJarsDir returns where install-test-deps.sh puts the jars.
func hdfsJarsDir() (string, error) {
	if d := os.Getenv(hdfsJarsEnv); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "nimbus", "hdfs-"+hdfsVersion), nil
}

// requireHDFSInstalled fails the test when the jars or Java are missing, and
// returns the jar directory.
func requireHDFSInstalled(t testing.TB) string {
	t.Helper()
	dir, err := hdfsJarsDir()
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, hdfsJarsMarker))
	}
	if err != nil {
		t.Fatalf("testcluster: the Hadoop %s jars are not fetched (%v); run `make test`, which fetches them with scripts/install-test-deps.sh", hdfsVersion, err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("testcluster: no Java runtime (%v); run `make test`, which installs one with scripts/install-test-deps.sh", err)
	}
	return dir
}

// javaProc is one server process at a time in its own process group, its
// output appended to logPath.
type javaProc struct {
	name    string
	logPath string

	mu  sync.Mutex // serialises start and stop
	run *procRun   // nil when stopped
}

// procRun is one run of a javaProc.
type procRun struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, set before exited is closed
}

// start launches java with args; it does not wait.
func (p *javaProc) start(dir string, args []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	cmd.Env = append(hadoopFreeEnv(), "HADOOP_USER_NAME="+HDFSUser)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	r := &procRun{cmd: cmd, exited: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	p.run = r
	return nil
}

// current returns the running process, or nil.
func (p *javaProc) current() *procRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run
}

// stop sends SIGTERM to the process group, SIGKILL after 5 s, and waits
// for the process to exit. It returns at once if it is not running.
func (p *javaProc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.run
	if r == nil {
		return
	}
	pid := r.cmd.Process.Pid
	select {
	case <-r.exited:
	default:
		signalGroup(pid, syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(stopTimeout):
			signalGroup(pid, syscall.SIGKILL)
			<-r.exited
		}
	}
	// Whatever the JVM started (du, df) and left in its group goes too.
	signalGroup(pid, syscall.SIGKILL)
	p.run = nil
}

// logTail logs the last lines of the process's log.
func (p *javaProc) logTail(t testing.TB, addr string) {
	lines, err := tail(p.logPath, logTailLines)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Logf("testcluster: hdfs %s log: %v", p.name, err)
		return
	}
	t.Logf("testcluster: hdfs %s (NameNode %s) log, last %d lines:\n%s", p.name, addr, len(lines), strings.Join(lines, "\n"))
}

// hadoopFreeEnv is the environment without HADOOP_* variables, which would
// point the servers at another installation or configuration.
func hadoopFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HADOOP_") {
			env = append(env, kv)
		}
	}
	return env
}
