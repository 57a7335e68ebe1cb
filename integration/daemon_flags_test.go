package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/internal/version"
)

// daemonTimeout bounds a daemon run that must end by itself: one that
// starts instead (the bug these tests guard against) is killed and fails
// the test rather than hanging it.
const daemonTimeout = 30 * time.Second

// runDaemon runs the built binary name ("nimbus", "supervisor") with args
// and extra environment, and returns what it printed and its exit code.
// ZooKeeper is an address where nothing listens, with a long connection
// timeout: a daemon that got as far as connecting would not exit by
// itself.
func runDaemon(t *testing.T, name string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), daemonTimeout)
	defer cancel()
	zk := []string{"--storm.zookeeper.servers", testcluster.ClosedAddr(t), "--storm.zookeeper.connection.timeout", "60s",
		"--storm.local.dir", t.TempDir()}
	cmd := exec.CommandContext(ctx, testcluster.Bin(t).Path(name), append(zk, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %q did not exit within %v: it started\nstderr:\n%s", name, args, daemonTimeout, errOut.String())
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// A mistyped flag (bin/nimbus --nimbus.grpc.prot 7728, bin/supervisor
// --supervisor.slots.port 6700), a stray argument (bin/nimbus bogus-arg)
// and the other command-line errors below each print the usage, end with
// the error, and exit 2: none is silent, and none starts the daemon.
func TestDaemonCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		daemon string
		args   []string
		want   string // stderr's last line
	}{
		{"nimbus", []string{"--nimbus.grpc.prot", "7728"},
			"nimbus: unknown flag: --nimbus.grpc.prot (did you mean --nimbus.grpc.port?)"},
		{"supervisor", []string{"--supervisor.slots.port", "6700"},
			"supervisor: unknown flag: --supervisor.slots.port (did you mean --supervisor.slots.ports?)"},
		{"nimbus", []string{"bogus-arg"},
			`nimbus: unexpected argument "bogus-arg": nimbus takes flags only`},
		{"supervisor", []string{"--nimbus.grpc.tls.enable", "false"},
			`supervisor: unexpected argument "false": supervisor takes flags only (a bool flag's value follows '=': --nimbus.grpc.tls.enable=false)`},
		{"nimbus", []string{"--nimbus.grpc.port", "abc"},
			`nimbus: configs: --nimbus.grpc.port: "abc" is not an integer`},
		{"supervisor", []string{"--nimbus.seeds", "n1"},
			"supervisor: unknown flag: --nimbus.seeds: nimbus.seeds is a key that supervisor does not take as a flag; set it in the --config file or as STORM_NIMBUS_SEEDS"},
	} {
		stdout, stderr, code := runDaemon(t, tc.daemon, nil, tc.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%s %q: exit %d, stdout %q; want 2 and nothing on stdout", tc.daemon, tc.args, code, stdout)
		}
		if !strings.HasPrefix(stderr, "Usage: "+tc.daemon+" [--config FILE] [flags]") || !strings.Contains(stderr, "--storm.zookeeper.servers") {
			t.Errorf("%s %q: no usage on stderr:\n%s", tc.daemon, tc.args, stderr)
		}
		if got := lastLine(stderr); got != tc.want {
			t.Errorf("%s %q: stderr ends\n%s\nwant\n%s", tc.daemon, tc.args, got, tc.want)
		}
	}
}

// A typo in a key, in the file or the environment, stops the daemon with
// the key it must be, before it touches ZooKeeper; every problem names
// where its value came from, and none of this is a command-line error
// (no usage).
func TestDaemonConfigurationErrorsNameTheirSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storm.yaml")
	body := "# a Storm file\nnimbus.childopts: -Xmx1g\ntopology.min.replicaton.count: 2\nnimbus.monitor.freq.secs: soon\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runDaemon(t, "nimbus", []string{"STORM_NIMBUS_GRPC_PORT=abc"}, "--config", path)
	want := []string{ // typos first, then values in the order of the keys
		"nimbus: configs: " + path + ":3: topology.min.replicaton.count: unknown key; did you mean topology.min.replication.count?",
		`nimbus: configs: STORM_NIMBUS_GRPC_PORT: "abc" is not an integer`,
		"nimbus: configs: " + path + `:4: nimbus.monitor.freq.secs: "soon" is not a duration (whole seconds or a Go duration like "5s")`,
	}
	if code != 2 || stderr != strings.Join(want, "\n")+"\n" {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2, stderr:\n%s", code, stderr, strings.Join(want, "\n"))
	}

	_, stderr, code = runDaemon(t, "supervisor", []string{"STORM_SUPERVISOR_SLOTS_PORT=6700"})
	if want := "supervisor: configs: STORM_SUPERVISOR_SLOTS_PORT: unknown variable; did you mean STORM_SUPERVISOR_SLOTS_PORTS (supervisor.slots.ports)?\n"; code != 2 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 2, %q", code, stderr, want)
	}
}

// --version on every binary prints the version and exits 0, whatever else
// is on the line.
func TestVersionFlagOfEveryBinary(t *testing.T) {
	for _, name := range []string{"nimbus", "supervisor"} {
		stdout, stderr, code := runDaemon(t, name, nil, "--version", "--nimbus.grpc.tls.enable")
		checkVersionLine(t, name, stdout, stderr, code)
	}
	stdout, stderr, code := stormctl(t, "--version")
	checkVersionLine(t, "stormctl", stdout, stderr, code)
}

func checkVersionLine(t *testing.T, name, stdout, stderr string, code int) {
	t.Helper()
	// testcluster builds without -ldflags: the default version, and the
	// commit the go command stamped, if any.
	want := name + " " + version.Version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, want) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("%s --version: exit %d, stdout %q, stderr %q; want 0 and one line starting %q", name, code, stdout, stderr, want)
	}
}

// stormctl version shows the leader's version as the leader reports it.
func TestStormctlVersionShowsTheLeaders(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	ps := c.StartNimbuses(t, 2)
	_, leader := c.WaitLeader(t, ps, 10*time.Second)

	args := append(c.ClientFlags(), "--seeds", ps[0].Addr()+","+ps[1].Addr(), "version")
	stdout, stderr, code := stormctl(t, args...)
	want := "server: " + version.Version + " (leader " + leader.Addr() + ")\n"
	if code != 0 || !strings.HasPrefix(stdout, "client: stormctl "+version.Version+" ") || !strings.HasSuffix(stdout, want) {
		t.Errorf("version: exit %d, stderr %q, stdout:\n%s\nwant it to end %q", code, stderr, stdout, want)
	}
}
