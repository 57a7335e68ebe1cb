package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/logviewer"
	"github.com/nimbusha/nimbus/workerproto"
)

// testWorker is a worker of topology t-1-1 on port 6700 whose code dir
// (as the store installs it) sits where any user may reach it; the
// supervisor's environment holds a secret and JAVA_HOME, which
// supervisor.worker.env passes.
func testWorker(t *testing.T, cfg *configs.Config, owner, env string) *worker {
	t.Helper()
	code := bundle(t)
	for _, d := range []string{filepath.Dir(filepath.Dir(code)), filepath.Dir(code)} { // t.TempDir's, 0700
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	cfg.SupervisorWorkerEnv = []string{"JAVA_HOME"}
	workers := t.TempDir()
	for _, d := range []string{filepath.Dir(workers), workers} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	cfg.LocalDir = filepath.Dir(workers)
	return &worker{
		spec: workerSpec{
			TopologyID: "t-1-1", Port: 6700, Executors: "a[1-1]", CodeDir: code, Owner: owner, Env: env,
			Argv:    []string{filepath.Join(code, codedistributor.ArtifactFile), "--db-password", "hunter2"},
			LogPath: filepath.Join(logviewer.WorkerDir(logviewer.Root(cfg.LocalDir), "t-1-1", 6700), logviewer.LogName),
			Dir:     filepath.Join(workers, "t-1-1-6700"),
		},
		topoStatus: workerproto.Active,
		policy: launchPolicy{cfg: cfg, lookup: users, environ: environ(map[string]string{
			"PATH": "/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "JAVA_HOME": "/opt/java", "HOME": "/root",
		})},
	}
}

func TestCommandAsTheOwnersUser(t *testing.T) {
	needsRoot(t)
	w := testWorker(t, asUserConfig(""), "alice", "GREETING=hello")
	cmd, as, err := w.command()
	if err != nil {
		t.Fatal(err)
	}
	if as != alice {
		t.Fatalf("runs as %+v, want alice", as)
	}
	if c := cmd.Credential; c == nil || c.UID != 1001 || c.GID != 1001 || !slices.Equal(c.Groups, alice.Groups) {
		t.Fatalf("credential %+v, want alice's uid, gid and groups", c)
	}
	// Its process group and parent-death signal are its keeper's to set
	// (package keeper's tests).
	if cmd.Path != w.spec.Argv[0] || !slices.Equal(cmd.Argv, w.spec.Argv) {
		t.Fatalf("program %s %q, want %q", cmd.Path, cmd.Argv, w.spec.Argv)
	}
	want := []string{"GREETING=hello", "HOME=/home/alice", "JAVA_HOME=/opt/java", "LOGNAME=alice", "PATH=/usr/bin:/bin",
		"STORM_CODE_DIR=" + w.spec.CodeDir, "STORM_ERROR_FILE=" + filepath.Join(w.spec.Dir, "errors"), "STORM_EXECUTORS=a[1-1]",
		"STORM_LOG_LEVEL_FILE=" + filepath.Join(w.spec.Dir, "log-levels.json"), "STORM_METRICS_FILE=" + filepath.Join(w.spec.Dir, "metrics", "metrics.json"),
		"STORM_PORT=6700", "STORM_STATUS_FILE=" + filepath.Join(w.spec.Dir, "status"), "STORM_TOPOLOGY_ID=t-1-1", "USER=alice"}
	if !slices.Equal(cmd.Env, want) {
		t.Fatalf("env\n%q\nwant\n%q", cmd.Env, want)
	}
	// The worker protocol's files: it reads its directory and status file,
	// writes only its error file.
	for _, f := range []struct {
		path     string
		mode     os.FileMode
		uid, gid uint32
	}{
		{w.spec.Dir, codeDirMode, 0, alice.GID},
		{filepath.Join(w.spec.Dir, "status"), codeFileMode, 0, alice.GID},
		{filepath.Join(w.spec.Dir, "errors"), 0o600, alice.UID, alice.GID},
		{filepath.Join(w.spec.Dir, "metrics"), 0o700, alice.UID, alice.GID},
	} {
		if mode, uid, gid := owner(t, f.path); mode != f.mode || uid != f.uid || gid != f.gid {
			t.Errorf("%s: mode %v, owner %d:%d; want %v, %d:%d", f.path, mode, uid, gid, f.mode, f.uid, f.gid)
		}
	}
	if cmd.Dir != w.spec.CodeDir {
		t.Fatalf("dir %s, want the code dir", cmd.Dir)
	}
	if mode, uid, gid := owner(t, w.spec.CodeDir); mode != codeDirMode || uid != 0 || gid != alice.GID {
		t.Fatalf("code dir: mode %v, owner %d:%d", mode, uid, gid)
	}
	// Its log: the keeper writes it 0640 in alice's group, in a directory
	// of the same group that nobody else reads.
	if o := cmd.Output; o == nil || o.Path != w.spec.LogPath || o.GID != int(alice.GID) || o.Mode != 0o640 || o.Keep != 9 ||
		o.MaxBytes != int64(configs.DefaultLogviewerMaxPerWorkerMB)<<20/10 {
		t.Fatalf("output %+v", o)
	}
	logDir := filepath.Dir(w.spec.LogPath)
	for _, d := range []string{logDir, filepath.Dir(logDir)} {
		if mode, uid, gid := owner(t, d); mode != 0o750 || uid != 0 || gid != alice.GID {
			t.Fatalf("%s: mode %v, owner %d:%d; want 0750, 0:%d", d, mode, uid, gid, alice.GID)
		}
	}
	if mode, uid, gid := owner(t, filepath.Join(logDir, "worker.yaml")); mode != 0o640 || uid != 0 || gid != alice.GID {
		t.Fatalf("worker.yaml: mode %v, owner %d:%d", mode, uid, gid)
	}
}

// A refused worker touches nothing: no log file, its code as installed.
func TestCommandRefusals(t *testing.T) {
	tests := []struct {
		owner, env string
		err        error
	}{
		{owner: "root", err: ErrRootWorker},
		{owner: "toor", err: ErrRootWorker},
		{owner: "mallory", err: ErrNoWorkerUser},
		{owner: "", err: ErrNoWorkerUser},
		{owner: "alice", env: "STORM_CODE_DIR=/tmp/evil", err: configs.ErrTopologyEnvironment},
	}
	for _, tc := range tests {
		w := testWorker(t, asUserConfig(""), tc.owner, tc.env)
		if _, _, err := w.command(); !errors.Is(err, tc.err) {
			t.Errorf("owner %q, env %q: %v, want %v", tc.owner, tc.env, err, tc.err)
		}
		if _, err := os.Stat(filepath.Dir(w.spec.LogPath)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("owner %q: a log directory was created (%v)", tc.owner, err)
		}
		if _, err := os.Stat(w.spec.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("owner %q: a worker directory was created (%v)", tc.owner, err)
		}
		if mode, _, _ := owner(t, w.spec.CodeDir); mode != 0o700 {
			t.Errorf("owner %q: code dir mode changed to %v", tc.owner, mode)
		}
	}
}

func TestCommandCannotReachItsCode(t *testing.T) {
	needsRoot(t)
	w := testWorker(t, asUserConfig(""), "alice", "")
	above := filepath.Dir(filepath.Dir(w.spec.CodeDir))
	if err := os.Chmod(above, 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err := w.command()
	if err == nil || !strings.Contains(err.Error(), above+" is mode") {
		t.Fatalf("code under a 0700 directory: %v, want an error naming %s", err, above)
	}
}

// Without supervisor.run.worker.as.user: as the supervisor, with the
// allow-listed environment all the same.
func TestCommandAsTheSupervisor(t *testing.T) {
	w := testWorker(t, configs.Default(), "root", "")
	cmd, as, err := w.command()
	if err != nil {
		t.Fatal(err)
	}
	if as != nil || cmd.Credential != nil {
		t.Fatalf("runs as %+v, credential %+v: want the supervisor's own", as, cmd.Credential)
	}
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			t.Fatalf("env has %s: %q", kv, cmd.Env)
		}
	}
	if me := currentAccount(); me != nil && !slices.Contains(cmd.Env, "USER="+me.Name) {
		t.Fatalf("env %q lacks USER=%s", cmd.Env, me.Name)
	}
	if mode, _, _ := owner(t, w.spec.Argv[0]); mode != 0o755 {
		t.Fatalf("artifact mode %v, want 0755", mode)
	}
}
