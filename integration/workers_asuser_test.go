package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// reportWorker is a worker that writes, to $OUT_DIR/$STORM_TOPOLOGY_ID,
// who it runs as, which topologies' code it can read, whether it can
// change its own code or read its log, and its environment; then it stays
// up until stopped.
const reportWorker = `#!/bin/sh
out="$OUT_DIR/$STORM_TOPOLOGY_ID"
{
	echo "uid=$(id -u)"
	echo "groups=$(id -G)"
	for d in ../*/; do
		cat "${d}spec.pb" >/dev/null 2>&1 && echo "reads=$(basename "$d")"
	done
	touch artifact 2>/dev/null && echo "writes=code"
	cat "../../../workers-artifacts/$STORM_TOPOLOGY_ID/$STORM_PORT/worker.log" >/dev/null 2>&1 && echo "reads=log"
	echo "--- env"
	env
} >"$out.tmp" && mv "$out.tmp" "$out"
exec sleep 3600
`

// testUser creates a local user for the test (its own group, plus a
// supplementary one) and removes both at cleanup, after what the test
// starts later has stopped.
func testUser(t *testing.T) (u *user.User, extraGID string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("workers run as users only under a supervisor running as root: run the integration tests as root")
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	name, group := "nimbus-w-"+hex.EncodeToString(suffix), "nimbus-g-"+hex.EncodeToString(suffix)
	// useradd and groupadd fail while another process holds /etc/passwd's
	// lock: retry.
	run := func(what string, args ...string) {
		t.Helper()
		testcluster.WaitFor(t, 30*time.Second, what, func() error {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %v: %s", args, err, out)
			}
			return nil
		})
	}
	run("groupadd "+group, "groupadd", group)
	t.Cleanup(func() { _ = exec.Command("groupdel", group).Run() })
	run("useradd "+name, "useradd", "--no-create-home", "--home-dir", "/home/"+name, "--shell", "/usr/sbin/nologin",
		"--user-group", "--groups", group, name)
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	return u, g.Gid
}

// openDir makes a directory for the cluster that users may traverse (a
// test's TempDir is 0700), removed at cleanup.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nimbus-asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func submitScript(t *testing.T, cl *client.Client, name, owner string, conf map[string]string) string {
	t.Helper()
	spec := &nimbusv1.TopologySpec{
		Name: name, NumWorkers: 1, Owner: owner, Config: conf,
		Components:    []*nimbusv1.ComponentSpec{{Id: "report", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact", "--db-password=hunter2"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, spec, strings.NewReader(reportWorker), int64(len(reportWorker)), nil)
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return resp.GetTopologyId()
}

// workerOf returns the heartbeat's state of topology's worker on sup.
func workerOf(t *testing.T, conn *zk.Conn, sup *testcluster.Process, topology string) (*clusterv1.WorkerState, error) {
	info, err := supervisorInfo(t, conn, sup.ID())
	if err != nil {
		return nil, err
	}
	for _, w := range info.GetWorkers() {
		if w.GetTopologyId() == topology {
			return w, nil
		}
	}
	return nil, fmt.Errorf("no worker of %s in %v", topology, info.GetWorkers())
}

// processesOf lists the pids whose environment says they are a worker
// of topology.
func processesOf(topology string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "STORM_TOPOLOGY_ID="+topology) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// With supervisor.run.worker.as.user, a worker runs as its topology owner's
// user with an allow-listed environment (no AWS_SECRET_ACCESS_KEY from the
// supervisor's); a topology owned by root, or by a user this host does not
// have, never starts a worker, and its worker state says why.
func TestWorkersRunAsTheirOwnersUser(t *testing.T) {
	u, extraGID := testUser(t)
	dir := openDir(t)
	out := filepath.Join(dir, "out") // the worker's to write
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(out, uid, gid); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "storm.yaml")
	yaml := fmt.Sprintf("%s: true\n%s: [NIMBUS_TEST_ALLOWED]\n", configs.KeyRunWorkerAsUser, configs.KeySupervisorWorkerEnv)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}

	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithDir(dir))
	ps := c.StartNimbuses(t, 1, testcluster.WithArgs("--nimbus.monitor.freq.secs", "1"))
	c.WaitLeader(t, ps, 10*time.Second)
	sup, err := c.StartSupervisor(testcluster.WithSlots(testcluster.FreePorts(t, 3)...),
		testcluster.WithArgs("--config", conf),
		testcluster.WithEnv("NIMBUS_TEST_ALLOWED=allowed value", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-env-secret"))
	if err != nil {
		t.Fatal(err)
	}
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	env := map[string]string{configs.TopologyEnvironment: "OUT_DIR=" + out + ", GREETING=hello=world"}

	// Refused: root, and a user this host does not have.
	refused := map[string]string{ // topology id -> what its worker state says
		submitScript(t, cl, "rootjob", "root", env):                    "workers never run as root",
		submitScript(t, cl, "ghostjob", "nimbus-no-such-user-17", env): `"nimbus-no-such-user-17", which does not exist`,
	}
	for id, says := range refused {
		testcluster.WaitFor(t, 30*time.Second, "the refusal of "+id+" in its worker state, retried", func() error {
			w, err := workerOf(t, conn, sup, id)
			switch {
			case err != nil:
				return err
			case w.GetPid() != 0 || w.GetState() == "running":
				t.Fatalf("a worker of %s started: %v", id, w)
			case w.GetState() != "backoff" || w.GetRestarts() < 2 || !strings.Contains(w.GetLastError(), says):
				return fmt.Errorf("worker %v", w)
			}
			return nil
		})
	}

	// The test user's topology.
	id := submitScript(t, cl, "userjob", u.Username, env)
	var worker *clusterv1.WorkerState
	testcluster.WaitFor(t, 30*time.Second, "the worker of "+id+" running", func() error {
		var err error
		if worker, err = workerOf(t, conn, sup, id); err == nil && (worker.GetState() != "running" || worker.GetPid() == 0) {
			err = fmt.Errorf("worker %v", worker)
		}
		return err
	})
	var report []byte
	testcluster.WaitFor(t, 20*time.Second, "the worker's report", func() error {
		var err error
		report, err = os.ReadFile(filepath.Join(out, id))
		return err
	})
	t.Logf("the worker's report:\n%s", report)
	facts, vars := parseReport(t, report)

	if facts["uid"] != u.Uid || u.Uid == "0" {
		t.Errorf("the worker runs as uid %v, want %s (%s)", facts["uid"], u.Uid, u.Username)
	}
	groups := strings.Fields(facts["groups"])
	if !slices.Contains(groups, u.Gid) || !slices.Contains(groups, extraGID) || slices.Contains(groups, "0") {
		t.Errorf("the worker's groups are %v, want %s and %s, not 0", groups, u.Gid, extraGID)
	}
	if st, err := os.Stat(fmt.Sprintf("/proc/%d", worker.GetPid())); err != nil || st.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Errorf("process %d: %v, %v; want owned by uid %d", worker.GetPid(), st, err, uid)
	}
	if facts["reads"] != id+",log" {
		t.Errorf("the worker reads %q, want its own code (%s) and its log, not the refused topologies' code", facts["reads"], id)
	}
	if facts["writes"] != "" {
		t.Errorf("the worker can change its code: writes=%s", facts["writes"])
	}

	want := map[string]string{
		"STORM_TOPOLOGY_ID": id, "STORM_PORT": strconv.Itoa(int(worker.GetPort())), "STORM_EXECUTORS": "report[1-1]",
		"STORM_CODE_DIR":      filepath.Join(sup.LocalDir, "supervisor", "code", id),
		"NIMBUS_TEST_ALLOWED": "allowed value", "OUT_DIR": out, "GREETING": "hello=world",
		"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username,
		// The worker protocol's files (package workerproto).
		"STORM_STATUS_FILE": filepath.Join(sup.LocalDir, "supervisor", "workers", fmt.Sprintf("%s-%d", id, worker.GetPort()), "status"),
		"STORM_ERROR_FILE":  filepath.Join(sup.LocalDir, "supervisor", "workers", fmt.Sprintf("%s-%d", id, worker.GetPort()), "errors"),
		"STORM_METRICS_FILE": filepath.Join(sup.LocalDir, "supervisor", "workers", fmt.Sprintf("%s-%d", id, worker.GetPort()),
			workerproto.MetricsDirName, workerproto.MetricsFileName),
		"STORM_LOG_LEVEL_FILE": filepath.Join(sup.LocalDir, "supervisor", "workers", fmt.Sprintf("%s-%d", id, worker.GetPort()),
			workerproto.LogLevelFileName),
	}
	for name, v := range want {
		if got, ok := vars[name]; !ok || got != v {
			t.Errorf("the worker's %s = %q (set: %v), want %q", name, got, ok, v)
		}
	}
	if vars["PATH"] == "" {
		t.Error("the worker has no PATH")
	}
	shell := []string{"PWD", "OLDPWD", "SHLVL", "_"} // what sh adds
	for name := range vars {
		if _, ok := want[name]; !ok && name != "PATH" && !slices.Contains(shell, name) {
			t.Errorf("the worker has %s=%q, which nothing allows", name, vars[name])
		}
	}
	if _, ok := vars["AWS_SECRET_ACCESS_KEY"]; ok {
		t.Error("AWS_SECRET_ACCESS_KEY reached the worker")
	}

	// Its code and log: root's, the user's group, nothing for others.
	for path, mode := range map[string]os.FileMode{
		want["STORM_CODE_DIR"]: 0o750, filepath.Join(want["STORM_CODE_DIR"], "artifact"): 0o750,
		filepath.Join(want["STORM_CODE_DIR"], "spec.pb"):                                                        0o640,
		filepath.Join(sup.LocalDir, "workers-artifacts", id, strconv.Itoa(int(worker.GetPort())), "worker.log"): 0o640,
		filepath.Join(sup.LocalDir, "workers-artifacts", id, strconv.Itoa(int(worker.GetPort()))):               0o750,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); st.Mode().Perm() != mode || sys.Uid != 0 || sys.Gid != uint32(gid) {
			t.Errorf("%s: mode %v, owner %d:%d; want %v, 0:%d", path, st.Mode().Perm(), sys.Uid, sys.Gid, mode, gid)
		}
	}

	// The refused topologies still have no process, no log file; the
	// supervisor's log says why, and no command line with its arguments.
	for rid, says := range refused {
		if pids := processesOf(rid); len(pids) != 0 {
			t.Errorf("processes %v run for the refused topology %s", pids, rid)
		}
		if w, err := workerOf(t, conn, sup, rid); err != nil || w.GetPid() != 0 || !strings.Contains(w.GetLastError(), says) {
			t.Errorf("the refused %s: %v, %v", rid, w, err)
		}
		if logs, _ := filepath.Glob(filepath.Join(sup.LocalDir, "workers-artifacts", rid, "*", "worker.log*")); len(logs) != 0 {
			t.Errorf("the refused %s has worker logs %v", rid, logs)
		}
		// Its code is held (so the worker's reads= above tried it), as installed.
		if st, err := os.Stat(filepath.Join(sup.LocalDir, "supervisor", "code", rid)); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("the refused %s's code: %v, %v; want held, mode 0700", rid, st, err)
		}
	}
	supLog, err := os.ReadFile(sup.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(supLog, []byte("cannot start worker")) || !bytes.Contains(supLog, []byte("workers never run as root")) {
		t.Error("the supervisor's log does not say why the root topology's worker was refused")
	}
	if bytes.Contains(supLog, []byte("hunter2")) {
		t.Error("the supervisor's log holds a worker's command-line argument")
	}
}

// parseReport splits reportWorker's output into its facts (key=value
// before "--- env"; repeated keys joined with ",") and the worker's
// environment.
func parseReport(t *testing.T, report []byte) (facts, vars map[string]string) {
	t.Helper()
	facts, vars = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(report))
	inEnv := false
	for sc.Scan() {
		if sc.Text() == "--- env" {
			inEnv = true
			continue
		}
		k, v, ok := strings.Cut(sc.Text(), "=")
		switch {
		case !ok:
			t.Fatalf("report line %q", sc.Text())
		case inEnv:
			vars[k] = v
		case facts[k] != "":
			facts[k] += "," + v
		default:
			facts[k] = v
		}
	}
	return facts, vars
}

// A supervisor told to run workers as users refuses to start unless it is
// root, naming the key.
func TestSupervisorRefusesToRunWorkersAsUsersUnlessRoot(t *testing.T) {
	u, _ := testUser(t)
	dir := openDir(t)
	// The built binaries sit in a directory only root may enter.
	bin := filepath.Join(dir, "supervisor")
	if err := os.Link(testcluster.Bin(t).Path("supervisor"), bin); err != nil {
		copyFile(t, testcluster.Bin(t).Path("supervisor"), bin)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	cmd := exec.Command(bin, "--storm.local.dir", filepath.Join(dir, "local"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Env = append(os.Environ(), "STORM_SUPERVISOR_RUN_WORKER_AS_USER=true") // supervisor.run.worker.as.user
	cmd.WaitDelay = 10 * time.Second
	output, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("supervisor as uid %d: %v, want exit status 1\n%s", uid, err, output)
	}
	if want := configs.KeyRunWorkerAsUser + " is true, but the supervisor runs as uid " + u.Uid; !strings.Contains(string(output), want) {
		t.Fatalf("output lacks %q:\n%s", want, output)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
