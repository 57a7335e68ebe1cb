package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/configs"
)

// The version the packages are built with: the tag form, so that the
// package version is derived from it (make package's PKG_VERSION).
const (
	testVersion    = "v9.8.7-test"
	testPkgVersion = "9.8.7+test"
)

// A packaged path, as dpkg-deb --contents shows it.
type entry struct{ mode, owner string }

// What the package installs: every file and the directories it owns.
var wantContents = map[string]entry{
	"./usr/bin/nimbus":                                        {"-rwxr-xr-x", "root/root"},
	"./usr/bin/supervisor":                                    {"-rwxr-xr-x", "root/root"},
	"./usr/bin/stormctl":                                      {"-rwxr-xr-x", "root/root"},
	"./usr/lib/systemd/system/storm-nimbus.service":           {"-rw-r--r--", "root/root"},
	"./usr/lib/systemd/system/storm-supervisor.service":       {"-rw-r--r--", "root/root"},
	"./usr/share/nimbus-ha/storm-supervisor-run-as-user.conf": {"-rw-r--r--", "root/root"},
	"./etc/storm/":                                            {"drwxr-xr-x", "root/root"},
	"./etc/storm/storm.yaml":                                  {"-rw-r-----", "root/storm"},
	"./var/lib/storm/":                                        {"drwx--x--x", "storm/storm"},
}

// The maintainer scripts: each control file is the script in scripts/.
var wantScripts = map[string]string{
	"preinst":  "scripts/preinstall.sh",
	"postinst": "scripts/postinstall.sh",
	"prerm":    "scripts/preremove.sh",
}

// TestPackages builds the .deb and .rpm with make package, then checks
// them as an operator would get them: files, owners, modes, the kept
// configuration, the maintainer scripts, the binaries run from an
// extracted tree, and the units verified by systemd-analyze in that tree.
func TestPackages(t *testing.T) {
	for _, tool := range []string{"make", "dpkg-deb", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make test-deps installs it): %v", tool, err)
		}
	}
	tmp := t.TempDir()
	dist := filepath.Join(tmp, "dist")
	run(t, "make", "-C", "..", "--no-print-directory", "package",
		"DIST="+dist, "PKG_BIN="+filepath.Join(tmp, "bin"), "VERSION="+testVersion)
	deb := onlyFile(t, dist, "*.deb")
	rpm := onlyFile(t, dist, "*.rpm")

	t.Run("deb contents", func(t *testing.T) { checkDebContents(t, deb) })
	t.Run("deb control", func(t *testing.T) { checkDebControl(t, deb, filepath.Join(tmp, "control")) })
	root := filepath.Join(tmp, "root")
	run(t, "dpkg-deb", "-x", deb, root)
	t.Run("binaries", func(t *testing.T) { checkBinaries(t, root) })
	t.Run("storm.yaml", func(t *testing.T) { checkConfig(t, root) })
	t.Run("units verify", func(t *testing.T) { verifyUnits(t, root) })
	t.Run("rpm", func(t *testing.T) { checkRPM(t, rpm) })
}

func checkDebContents(t *testing.T, deb string) {
	got := map[string]entry{}
	for _, line := range strings.Split(strings.TrimSpace(run(t, "dpkg-deb", "--contents", deb)), "\n") {
		f := strings.Fields(line) // mode owner/group size date time path
		if len(f) != 6 {
			t.Fatalf("dpkg-deb --contents line %q", line)
		}
		got[f[5]] = entry{f[0], f[1]}
	}
	for path, want := range wantContents {
		if g, ok := got[path]; !ok {
			t.Errorf("%s is not in the package", path)
		} else if g != want {
			t.Errorf("%s is %s %s, want %s %s", path, g.mode, g.owner, want.mode, want.owner)
		}
	}
	for path, g := range got {
		if _, ok := wantContents[path]; !ok && !strings.HasPrefix(g.mode, "d") {
			t.Errorf("unexpected file in the package: %s", path)
		}
	}
}

func checkDebControl(t *testing.T, deb, dir string) {
	if v := strings.TrimSpace(run(t, "dpkg-deb", "--field", deb, "Version")); v != testPkgVersion {
		t.Errorf("Version %q, want %q (from VERSION=%s)", v, testPkgVersion, testVersion)
	}
	if c := strings.TrimSpace(run(t, "dpkg-deb", "--info", deb, "conffiles")); c != "/etc/storm/storm.yaml" {
		t.Errorf("conffiles %q, want /etc/storm/storm.yaml only", c)
	}
	run(t, "dpkg-deb", "--control", deb, dir)
	for name, src := range wantScripts {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("no %s: %v", name, err)
			continue
		}
		if want := readFile(t, src); !bytes.Equal(got, want) {
			t.Errorf("%s is not %s", name, src)
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", name, err)
		}
	}
}

// checkBinaries runs each packaged binary's --version: built by make
// package with the version's ldflags.
func checkBinaries(t *testing.T, root string) {
	for _, name := range []string{"nimbus", "supervisor", "stormctl"} {
		out := run(t, filepath.Join(root, "usr/bin", name), "--version")
		if want := name + " " + testVersion + " "; !strings.HasPrefix(out, want) {
			t.Errorf("%s --version: %q, want it to begin %q", name, out, want)
		}
	}
}

// checkConfig: the packaged storm.yaml is the sample with storm.local.dir
// the package's /var/lib/storm, nothing else changed.
func checkConfig(t *testing.T, root string) {
	got := strings.Split(string(readFile(t, filepath.Join(root, "etc/storm/storm.yaml"))), "\n")
	sample := strings.Split(string(readFile(t, "../configs/storm.yaml")), "\n")
	if len(got) != len(sample) {
		t.Fatalf("packaged storm.yaml has %d lines, the sample %d", len(got), len(sample))
	}
	changed := 0
	for i := range got {
		if got[i] == sample[i] {
			continue
		}
		changed++
		if !strings.HasPrefix(sample[i], configs.KeyLocalDir+":") || got[i] != configs.KeyLocalDir+`: "/var/lib/storm"` {
			t.Errorf("line %d: %q, the sample's %q", i+1, got[i], sample[i])
		}
	}
	if changed != 1 {
		t.Errorf("%d lines differ from the sample, want the %s line only", changed, configs.KeyLocalDir)
	}
}

// verifyUnits runs systemd-analyze verify on the packaged units in the
// extracted tree (their binaries resolved there), the supervisor with and
// without its run-as-user drop-in; the host's units (the targets they name)
// are copied in, and the host's kill(1), which ExecReload runs. Any warning
// fails, not only errors.
func verifyUnits(t *testing.T, root string) {
	run(t, "cp", "-an", "/usr/lib/systemd/system/.", filepath.Join(root, "usr/lib/systemd/system"))
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "cp", "-L", "/bin/kill", filepath.Join(root, "bin/kill"))
	verify := func() {
		cmd := exec.Command("systemd-analyze", "verify", "--man=no", "--root="+root, "storm-nimbus.service", "storm-supervisor.service")
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
	verify()
	dropIn := filepath.Join(root, "etc/systemd/system/storm-supervisor.service.d/run-as-user.conf")
	if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "cp", filepath.Join(root, "usr/share/nimbus-ha/storm-supervisor-run-as-user.conf"), dropIn)
	verify()
}

// TestUnitSettings holds the units to what the daemons need: readiness
// they send, restarts, stop timeouts no shorter than the stop's bounds at
// the defaults, keepers left running, no capabilities, the sandbox.
func TestUnitSettings(t *testing.T) {
	nimbus := unitSettings(t, "systemd/storm-nimbus.service")
	supervisor := unitSettings(t, "systemd/storm-supervisor.service")
	runAsUser := unitSettings(t, "systemd/storm-supervisor-run-as-user.conf")
	for name, u := range map[string]map[string]string{"nimbus": nimbus, "supervisor": supervisor} {
		want := map[string]string{
			"Type": "notify", "NotifyAccess": "main", "Restart": "always", "User": "storm",
			"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ReadWritePaths": "/var/lib/storm",
			"ProtectHome": "yes", "CapabilityBoundingSet": "", "AmbientCapabilities": "",
			"ExecStart":  "/usr/bin/" + name + " --config /etc/storm/storm.yaml",
			"ExecReload": "/bin/kill -HUP $MAINPID",
		}
		for k, v := range want {
			if got, ok := u[k]; !ok || got != v {
				t.Errorf("%s unit: %s=%q, want %q", name, k, got, v)
			}
		}
	}
	if got := nimbus["PrivateTmp"]; got != "yes" {
		t.Errorf("nimbus unit: PrivateTmp=%q, want yes", got)
	}
	// systemd removes a private /tmp when the unit stops, under kept workers.
	if got, ok := supervisor["PrivateTmp"]; ok && got != "no" {
		t.Errorf("supervisor unit: PrivateTmp=%q: workers that outlive the supervisor would lose their /tmp", got)
	}
	if got := supervisor["KillMode"]; got != "process" {
		t.Errorf("supervisor unit: KillMode=%q, want process (keepers outlive a supervisor's restart)", got)
	}
	if got := nimbus["KillMode"]; got == "process" || got == "none" {
		t.Errorf("nimbus unit: KillMode=%q leaves processes behind", got)
	}
	checkStopTimeout(t, "nimbus", nimbus, configs.DefaultNimbusDrainTimeout+configs.DefaultZKSessionTimeout)
	checkStopTimeout(t, "supervisor", supervisor, configs.DefaultWorkerShutdownSleep+5*time.Second)
	if runAsUser["User"] != "root" || !strings.Contains(runAsUser["CapabilityBoundingSet"], "CAP_SETUID") ||
		!strings.Contains(runAsUser["CapabilityBoundingSet"], "CAP_SETGID") || runAsUser["AmbientCapabilities"] != "" {
		t.Errorf("run-as-user drop-in: User=%q CapabilityBoundingSet=%q AmbientCapabilities=%q, want root bounded to CAP_SETUID, CAP_SETGID and the rest, nothing ambient",
			runAsUser["User"], runAsUser["CapabilityBoundingSet"], runAsUser["AmbientCapabilities"])
	}
}

func checkStopTimeout(t *testing.T, name string, u map[string]string, atLeast time.Duration) {
	t.Helper()
	d, err := time.ParseDuration(u["TimeoutStopSec"] + "s")
	if err != nil {
		t.Errorf("%s unit: TimeoutStopSec=%q is not a number of seconds", name, u["TimeoutStopSec"])
		return
	}
	if d < atLeast {
		t.Errorf("%s unit: TimeoutStopSec=%v, shorter than its stop takes at the defaults (%v)", name, d, atLeast)
	}
}

// unitSettings reads a unit file's settings (the last of each name wins,
// as in systemd for these).
func unitSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	settings := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not a setting", path, line)
		}
		settings[k] = v
	}
	return settings
}

func checkRPM(t *testing.T, rpm string) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Skipf("rpm is not installed (make test-deps installs it): the .rpm is not inspected")
	}
	if v := run(t, "rpm", "-qp", "--qf", "%{VERSION}", rpm); v != testPkgVersion {
		t.Errorf("rpm version %q, want %q", v, testPkgVersion)
	}
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(run(t, "rpm", "-qp", "--qf",
		`[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME}/%{FILEGROUPNAME} %{FILEFLAGS:fflags}\n]`, rpm)), "\n") {
		path, rest, _ := strings.Cut(line, " ")
		files[path] = rest
	}
	want := map[string]string{
		"/usr/bin/nimbus":       "-rwxr-xr-x root/root ",
		"/etc/storm/storm.yaml": "-rw-r----- root/storm cn", // %config(noreplace)
		"/var/lib/storm":        "drwx--x--x storm/storm ",
		"/usr/lib/systemd/system/storm-supervisor.service": "-rw-r--r-- root/root ",
	}
	for path, w := range want {
		if strings.TrimSpace(files[path]) != strings.TrimSpace(w) {
			t.Errorf("rpm: %s is %q, want %q", path, files[path], w)
		}
	}
	scripts := run(t, "rpm", "-qlp", "--scripts", rpm)
	for _, s := range []string{"preinstall scriptlet", "postinstall scriptlet", "preuninstall scriptlet",
		"useradd --system", "systemctl try-restart"} {
		if !strings.Contains(scripts, s) {
			t.Errorf("rpm -qlp --scripts has no %q", s)
		}
	}
}

// run runs a command and returns its standard output; a failure fails
// the test with what it printed.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func onlyFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("want one %s in %s, found %v (%v)", pattern, dir, m, err)
	}
	return m[0]
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
