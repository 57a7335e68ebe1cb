package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/version"
)

// isolate blanks the variables configs reads (empty is unset), so the
// developer's environment cannot leak into a test.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range configs.Keys() {
		t.Setenv(configs.EnvName(k), "")
	}
}

// setup runs Setup for a nimbus, or a supervisor when name says so, and
// returns what it wrote.
func setup(t *testing.T, name string, args ...string) (stdout, stderr string, code int, ok bool) {
	t.Helper()
	keys := configs.NimbusFlagKeys()
	if name == "supervisor" {
		keys = configs.SupervisorFlagKeys()
	}
	var out, errOut strings.Builder
	_, _, code, ok = Setup(name, args, &out, &errOut, keys)
	return out.String(), errOut.String(), code, ok
}

// A daemon with TLS on and no certificate of its own would fail every
// handshake it serves: Setup refuses it, naming the key, before anything
// starts. A client (configs.Validate alone) may go without one.
func TestSetupRefusesTLSWithoutACertificate(t *testing.T) {
	isolate(t)
	_, stderr, code, ok := setup(t, "nimbus", "--"+configs.KeyTLSEnable, "--"+configs.KeyTLSTruststore+"=ca.pem")
	if ok || code != ExitUsage {
		t.Fatalf("Setup = code %d, ok %v; want 2 and refused", code, ok)
	}
	if !strings.Contains(stderr, configs.KeyTLSCert+": must be set") {
		t.Errorf("stderr %q does not name %s", stderr, configs.KeyTLSCert)
	}
}

// An unknown code distributor is refused with the classes there are.
func TestSetupRefusesAnUnknownCodeDistributor(t *testing.T) {
	isolate(t)
	_, stderr, code, ok := setup(t, "supervisor", "--"+configs.KeyCodeDistributorClass+"=s3")
	if ok || code != ExitUsage {
		t.Fatalf("Setup = code %d, ok %v; want 2 and refused", code, ok)
	}
	if !strings.Contains(stderr, `"s3" is not one of`) {
		t.Errorf("stderr %q does not name the classes", stderr)
	}
}

// A wrong command line is told with the usage, the error last (what a
// terminal's bottom line and systemctl status show), and exits 2.
func TestSetupCommandLineErrors(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // the last line of stderr
	}{
		{"nimbus", []string{"--nimbus.grpc.prot", "7728"},
			"nimbus: unknown flag: --nimbus.grpc.prot (did you mean --nimbus.grpc.port?)"},
		{"supervisor", []string{"--supervisor.slots.port", "6700"},
			"supervisor: unknown flag: --supervisor.slots.port (did you mean --supervisor.slots.ports?)"},
		{"nimbus", []string{"-config", "storm.yaml"},
			"nimbus: unknown shorthand flag: 'c' in -config (did you mean --config?)"},
		{"supervisor", []string{"--nimbus.seeds", "n1"},
			"supervisor: unknown flag: --nimbus.seeds: nimbus.seeds is a key that supervisor does not take as a flag; set it in the --config file or as STORM_NIMBUS_SEEDS"},
		{"nimbus", []string{"--no.such.thing"},
			"nimbus: unknown flag: --no.such.thing"},
		{"nimbus", []string{"--nimbus.grpc.port"},
			"nimbus: flag needs an argument: --nimbus.grpc.port"},
		{"nimbus", []string{"bogus-arg"},
			`nimbus: unexpected argument "bogus-arg": nimbus takes flags only`},
		{"nimbus", []string{"--log.level", "info", "a", "b"},
			`nimbus: unexpected argument "a", "b": nimbus takes flags only`},
		{"nimbus", []string{"--nimbus.grpc.tls.enable", "false"},
			`nimbus: unexpected argument "false": nimbus takes flags only (a bool flag's value follows '=': --nimbus.grpc.tls.enable=false)`},
		{"nimbus", []string{"--nimbus.grpc.port", "abc"},
			`nimbus: configs: --nimbus.grpc.port: "abc" is not an integer`},
		{"supervisor", []string{"--supervisor.slots.ports", "6700,6700"},
			`supervisor: configs: --supervisor.slots.ports: 6700 is listed twice`},
	} {
		stdout, stderr, code, ok := setup(t, tc.name, tc.args...)
		if ok || code != ExitUsage || stdout != "" {
			t.Errorf("%s %q: code %d, ok %v, stdout %q; want 2, refused, nothing on stdout", tc.name, tc.args, code, ok, stdout)
		}
		if !strings.HasPrefix(stderr, "Usage: "+tc.name+" ") || !strings.Contains(stderr, "--config string") {
			t.Errorf("%s %q: stderr has no usage:\n%s", tc.name, tc.args, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if last := lines[len(lines)-1]; last != tc.want {
			t.Errorf("%s %q: last line\n%s\nwant\n%s", tc.name, tc.args, last, tc.want)
		}
	}
}

// A bad configuration outside the command line is told without the
// usage, one line per problem, each naming where its value came from.
func TestSetupConfigurationErrors(t *testing.T) {
	isolate(t)
	path := filepath.Join(t.TempDir(), "storm.yaml")
	if err := os.WriteFile(path, []byte("nimbus.grpc.port: 7000\ntopology.min.replicaton.count: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORM_NIMBUS_METRICS_PORT", "abc")
	stdout, stderr, code, ok := setup(t, "nimbus", "--config", path)
	if ok || code != ExitUsage || stdout != "" {
		t.Fatalf("code %d, ok %v, stdout %q; want 2, refused, nothing on stdout", code, ok, stdout)
	}
	want := "nimbus: configs: " + path + ":2: topology.min.replicaton.count: unknown key; did you mean topology.min.replication.count?\n" +
		`nimbus: configs: STORM_NIMBUS_METRICS_PORT: "abc" is not an integer` + "\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}

func TestSetupVersionAndHelp(t *testing.T) {
	isolate(t)
	for _, name := range []string{"nimbus", "supervisor"} {
		// --version wins over what would stop the daemon otherwise.
		stdout, stderr, code, ok := setup(t, name, "--version", "--storm.zookeeper.root=bad")
		if ok || code != ExitOK || stdout != version.String(name)+"\n" || stderr != "" {
			t.Errorf("%s --version: code %d, ok %v, stdout %q, stderr %q", name, code, ok, stdout, stderr)
		}
		stdout, stderr, code, ok = setup(t, name, "--help")
		if ok || code != ExitOK || !strings.HasPrefix(stdout, "Usage: "+name+" ") || !strings.Contains(stdout, "--version") || stderr != "" {
			t.Errorf("%s --help: code %d, ok %v, stderr %q, stdout:\n%s", name, code, ok, stderr, stdout)
		}
	}
}

func TestSetupStarts(t *testing.T) {
	isolate(t)
	cfg, log, code, ok := Setup("nimbus", []string{"--nimbus.grpc.port", "7001", "--log.level=warn"},
		&strings.Builder{}, &strings.Builder{}, configs.NimbusFlagKeys())
	if !ok || code != ExitOK || cfg == nil || log == nil || cfg.NimbusGRPCPort != 7001 {
		t.Fatalf("Setup = %v, %v, %d, %v", cfg, log, code, ok)
	}
}
