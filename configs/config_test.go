package configs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// isolate blanks every variable this package reads so the developer's
// environment cannot leak into a test; Load treats empty as unset.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range Keys() {
		t.Setenv(EnvName(k), "")
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "storm.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadArgs loads with every key registered as a flag and args parsed.
func loadArgs(t *testing.T, args ...string) (*Config, []string, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs, Keys()...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Load(fs)
}

func mustLoad(t *testing.T, args ...string) *Config {
	t.Helper()
	c, warnings, err := loadArgs(t, args...)
	if err != nil {
		t.Fatalf("Load(%q): %v", args, err)
	}
	if len(warnings) != 0 {
		t.Fatalf("Load(%q) warnings: %q", args, warnings)
	}
	return c
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestPrecedence(t *testing.T) {
	file := "nimbus.grpc.port: 7001\n"
	for _, tc := range []struct {
		name            string
		file, env, flag bool
		want            int
	}{
		{"defaults", false, false, false, DefaultNimbusGRPCPort},
		{"file over defaults", true, false, false, 7001},
		{"env over file", true, true, false, 7002},
		{"flag over env", true, true, true, 7003},
		{"flag over defaults", false, false, true, 7003},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			var args []string
			if tc.file {
				args = append(args, "--config", writeFile(t, file))
			}
			if tc.env {
				t.Setenv("STORM_NIMBUS_GRPC_PORT", "7002")
			}
			if tc.flag {
				args = append(args, "--nimbus.grpc.port=7003")
			}
			if got := mustLoad(t, args...).NimbusGRPCPort; got != tc.want {
				t.Fatalf("nimbus.grpc.port = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestDurationForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		unit time.Duration
		want time.Duration
	}{
		{"500", time.Millisecond, 500 * time.Millisecond},
		{"10", time.Second, 10 * time.Second},
		{" 10 ", time.Second, 10 * time.Second},
		{"5s", time.Millisecond, 5 * time.Second},
		{"1500ms", time.Second, 1500 * time.Millisecond},
		{"1m30s", time.Second, 90 * time.Second},
		{"-1", time.Second, -time.Second}, // Validate rejects it, not the parser
	} {
		got, err := parseDuration(tc.in, tc.unit)
		if err != nil || got != tc.want {
			t.Errorf("parseDuration(%q, %v) = %v, %v; want %v", tc.in, tc.unit, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "abc", "5 s", "1.5", "9223372036854775807"} {
		if _, err := parseDuration(in, time.Second); err == nil {
			t.Errorf("parseDuration(%q) succeeded", in)
		}
	}
}

func TestDurationFromEachSource(t *testing.T) {
	isolate(t)
	path := writeFile(t, strings.Join([]string{
		"storm.zookeeper.session.timeout: 30000", // ms as a YAML integer
		"nimbus.monitor.freq.secs: 7",            // secs as a YAML integer
		`nimbus.code.sync.freq.secs: "2m"`,       // Go duration in YAML
		"",
	}, "\n"))
	t.Setenv("STORM_ZOOKEEPER_CONNECTION_TIMEOUT", "2s")
	t.Setenv("STORM_SUPERVISOR_HEARTBEAT_FREQUENCY_SECS", "3")
	c := mustLoad(t, "--config", path, "--nimbus.drain.timeout.secs=250ms")

	for key, want := range map[string]time.Duration{
		KeyZKSessionTimeout:    30 * time.Second,
		KeyMonitorFreq:         7 * time.Second,
		KeyCodeSyncFreq:        2 * time.Minute,
		KeyZKConnectionTimeout: 2 * time.Second,
		KeySupervisorHeartbeat: 3 * time.Second,
		KeyNimbusDrainTimeout:  250 * time.Millisecond,
	} {
		f, _ := lookupField(key)
		if got := *f.ptr(c).(*time.Duration); got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

func TestListsAreCommaSeparated(t *testing.T) {
	isolate(t)
	t.Setenv("STORM_ZOOKEEPER_SERVERS", "a,b, c")
	t.Setenv("STORM_SUPERVISOR_SLOTS_PORTS", "6800, 6801,")
	c := mustLoad(t, "--nimbus.seeds", "n1, n2:7000")

	if want := []string{"a", "b", "c"}; !slices.Equal(c.ZKHosts, want) {
		t.Errorf("ZKHosts = %q, want %q", c.ZKHosts, want)
	}
	if want := []int{6800, 6801}; !slices.Equal(c.SupervisorSlotsPorts, want) {
		t.Errorf("SupervisorSlotsPorts = %v, want %v", c.SupervisorSlotsPorts, want)
	}
	if want := []string{"n1:6627", "n2:7000"}; !slices.Equal(c.SeedAddrs(), want) {
		t.Errorf("SeedAddrs() = %q, want %q", c.SeedAddrs(), want)
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		KeyZKServers:          "STORM_ZOOKEEPER_SERVERS",
		KeyLocalDir:           "STORM_LOCAL_DIR",
		KeyNimbusHost:         "STORM_NIMBUS_HOST",
		KeyMaxReplicationWait: "STORM_TOPOLOGY_MAX_REPLICATION_WAIT_TIME_SEC",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

// A value that does not convert is reported by where it was set: the
// variable, the file's line and key, the flag.
func TestConversionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		env  [2]string
		args []string
		want string // FILE stands for the file's path
	}{
		{name: "env int", env: [2]string{"STORM_ZOOKEEPER_PORT", "abc"},
			want: `configs: STORM_ZOOKEEPER_PORT: "abc" is not an integer`},
		{name: "file int", file: "nimbus.max.artifact.bytes: 1.5\n",
			want: `configs: FILE:1: nimbus.max.artifact.bytes: 1.5 is not an integer`},
		{name: "file duration", file: "# comment\n\nnimbus.monitor.freq.secs: 1.5\n",
			want: `configs: FILE:3: nimbus.monitor.freq.secs: 1.5 is not a duration`},
		{name: "env duration", env: [2]string{"STORM_ZOOKEEPER_SESSION_TIMEOUT", "soon"},
			want: `configs: STORM_ZOOKEEPER_SESSION_TIMEOUT: "soon" is not a duration (whole milliseconds`},
		{name: "flag int list", args: []string{"--supervisor.slots.ports=6700,x"},
			want: `configs: --supervisor.slots.ports: "x" is not an integer`},
		{name: "file string from list", file: "nimbus.grpc.port: 7001\nnimbus.host: [a, b]\n",
			want: `configs: FILE:2: nimbus.host: [a b] is not a string`},
		{name: "file list from map", file: "nimbus.seeds: {a: 1}\n",
			want: `configs: FILE:1: nimbus.seeds: map[a:1] is not a list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			args := tc.args
			want := tc.want
			if tc.file != "" {
				path := writeFile(t, tc.file)
				args = append(args, "--config", path)
				want = strings.ReplaceAll(want, "FILE", path)
			}
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			c, _, err := loadArgs(t, args...)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err = %v, want it to start with %q", err, want)
			}
			if c != nil {
				t.Fatal("Load returned a Config with an error")
			}
		})
	}
}

func TestLoadValidates(t *testing.T) {
	isolate(t)
	path := writeFile(t, "nimbus.grpc.port: 70000\n")
	c, _, err := LoadFile(path)
	want := "configs: " + path + ":1: nimbus.grpc.port: 70000 is out of range 0..65535"
	if c != nil || err == nil || err.Error() != want {
		t.Fatalf("LoadFile = %v, %v; want nil, %q", c, err, want)
	}
}

// A rule broken by a value names where that value was set; a rule broken
// by a default the operator left alone names the key.
func TestValidationErrorsNameTheSource(t *testing.T) {
	isolate(t)
	path := writeFile(t, "storm.zookeeper.port: 2181\nnimbus.grpc.port: 70000\n")
	t.Setenv("STORM_ZOOKEEPER_ROOT", "storm")
	t.Setenv("STORM_NIMBUS_GRPC_TLS_ENABLE", "true") // then the truststore, a default, is missing
	_, _, err := loadArgs(t, "--config", path, "--log.level", "loud")
	var got []string
	for _, e := range Leaves(err) {
		got = append(got, e.Error())
	}
	for _, want := range []string{
		"configs: " + path + ":2: nimbus.grpc.port: 70000 is out of range 0..65535",
		`configs: STORM_ZOOKEEPER_ROOT: "storm" does not start with '/'`,
		`configs: --log.level: "loud" is not one of debug, info, warn, error`,
		"configs: nimbus.grpc.tls.truststore.path: must be set when nimbus.grpc.tls.enable is true",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("errors %q\nlack %q", got, want)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d errors, want 4: %q", len(got), got)
	}
	var ke *KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("%v is not a KeyError", err)
	}
}

// A null in the file is no value, as in Storm's own files: the default
// stays.
func TestNullKeepsTheDefault(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "--config", writeFile(t, "nimbus.grpc.port: null\nstorm.zookeeper.servers: ~\n"))
	if c.NimbusGRPCPort != DefaultNimbusGRPCPort || !slices.Equal(c.ZKHosts, []string{DefaultZKServer}) {
		t.Errorf("port %d, servers %q; want the defaults", c.NimbusGRPCPort, c.ZKHosts)
	}
}

func TestBadFile(t *testing.T) {
	isolate(t)

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, _, err := loadArgs(t, "--config", missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v, want not-exist naming %s", err, missing)
	}

	bad := writeFile(t, "storm.zookeeper.port: [1, 2\n")
	_, _, err = loadArgs(t, "--config", bad)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad YAML: err = %v, want one naming %s", err, bad)
	}

	empty := writeFile(t, "")
	if _, _, err := LoadFile(empty); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

func TestUnknownKeysWarn(t *testing.T) {
	isolate(t)
	path := writeFile(t, strings.Join([]string{
		"storm.zookeeper.port: 2182",
		"topology.workers: 4",
		`nimbus.childopts: "-Xmx1024m"`,
		"storm.auth:",
		"  scheme: none",
		"  user: x",
		"storm.zookeeper.auth.user: null",
		"",
	}, "\n"))
	c, warnings, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.ZKPort != 2182 {
		t.Errorf("ZKPort = %d, want 2182", c.ZKPort)
	}
	want := []string{ // in the file's order
		"configs: " + path + `:2: unknown key "topology.workers" ignored`,
		"configs: " + path + `:3: unknown key "nimbus.childopts" ignored`,
		"configs: " + path + `:4: unknown key "storm.auth" ignored`,
		"configs: " + path + `:7: unknown key "storm.zookeeper.auth.user" ignored`,
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings = %q\nwant %q", warnings, want)
	}
}

// A key close to a known one is a typo: an error with the key it must be,
// never a run on the default. So is a known key written as nested YAML.
// Unknown keys far from any still warn, and every problem is reported at
// once.
func TestTypoedKeysAreErrors(t *testing.T) {
	isolate(t)
	path := writeFile(t, strings.Join([]string{
		"nimbus.childopts: -Xmx1g",
		"topology.min.replicaton.count: 2",
		"nimbus:",
		"  grpc:",
		"    port: 7001",
		"  seedz: [a]",
		"Supervisor.Slots.Port: [6700]",
		"nimbus.grpc.port: 70000",
		"",
	}, "\n"))
	c, warnings, err := LoadFile(path)
	if c != nil || err == nil {
		t.Fatalf("LoadFile = %v, %v; want an error", c, err)
	}
	var got []string
	for _, e := range Leaves(err) {
		got = append(got, e.Error())
	}
	want := []string{
		"configs: " + path + ":2: topology.min.replicaton.count: unknown key; did you mean topology.min.replication.count?",
		"configs: " + path + ":5: nimbus.grpc.port: written as nested keys, which are not read; write nimbus.grpc.port as one key at the top level",
		"configs: " + path + ":6: nimbus.seedz: unknown key, written nested; did you mean nimbus.seeds, as one key at the top level?",
		"configs: " + path + ":7: Supervisor.Slots.Port: unknown key; did you mean supervisor.slots.ports?",
		"configs: " + path + ":8: nimbus.grpc.port: 70000 is out of range 0..65535",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := []string{"configs: " + path + `:1: unknown key "nimbus.childopts" ignored`}; !slices.Equal(warnings, w) {
		t.Errorf("warnings = %q, want %q", warnings, w)
	}
}

// A STORM_* variable close to a known one is a typo too. Other STORM_*
// variables belong to others (Storm's scripts, the workers' environment)
// and pass without a word.
func TestTypoedVariablesAreErrors(t *testing.T) {
	isolate(t)
	for _, name := range []string{"STORM_HOME", "STORM_CONF_DIR", "STORM_LOG_DIR", "STORM_JAR_JVM_OPTS",
		"STORM_EXT_CLASSPATH", "STORM_TOPOLOGY_ID", "STORM_PORT", "STORM_EXECUTORS", "STORM_CODE_DIR"} {
		t.Setenv(name, "x")
	}
	if _, _, err := LoadFile(""); err != nil {
		t.Fatalf("others' STORM_* variables: %v", err)
	}

	t.Setenv("STORM_TOPOLOGY_MIN_REPLICATON_COUNT", "2")
	t.Setenv("STORM_NIMBUS_SEED", "") // empty: unset, as for known variables
	_, _, err := LoadFile("")
	want := "configs: STORM_TOPOLOGY_MIN_REPLICATON_COUNT: unknown variable; did you mean STORM_TOPOLOGY_MIN_REPLICATION_COUNT (topology.min.replication.count)?"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// The sample must load cleanly and state the real defaults.
func TestSampleIsDefaults(t *testing.T) {
	isolate(t)
	c, warnings, err := LoadFile("storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	c.Sources, c.File = nil, "" // where the values came from is not a value
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("storm.yaml differs from Default():\n got %+v\nwant %+v", c, Default())
	}

	body, err := os.ReadFile("storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range Keys() {
		// nimbus.host is commented out: its default is the hostname.
		if !strings.Contains(string(body), "\n"+key+":") && !strings.Contains(string(body), "# "+key+":") {
			t.Errorf("storm.yaml does not document %s", key)
		}
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range []struct {
		key    string
		mutate func(c *Config)
	}{
		{KeyZKServers, func(c *Config) { c.ZKHosts = nil }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{"zk 1"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{"zk1:0"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{"zk1:99999"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{"zk1:"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{":2181"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{"a:b:c"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{"zk1/x"} }},
		{KeyZKServers, func(c *Config) { c.ZKHosts = []string{""} }},
		{KeyZKPort, func(c *Config) { c.ZKPort = 0 }},
		{KeyZKPort, func(c *Config) { c.ZKPort = 70000 }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "" }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "storm" }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "/" }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "/storm/" }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "/a//b" }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "/a/./b" }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "/a/.." }},
		{KeyZKRoot, func(c *Config) { c.ZKRoot = "/zookeeper/storm" }},
		{KeyZKSessionTimeout, func(c *Config) { c.ZKSessionTimeout = 0 }},
		{KeyZKSessionTimeout, func(c *Config) { c.ZKSessionTimeout = 25 * time.Hour }},
		{KeyZKConnectionTimeout, func(c *Config) { c.ZKConnectionTimeout = -time.Second }},
		{KeyLocalDir, func(c *Config) { c.LocalDir = "" }},
		{KeyNimbusHost, func(c *Config) { c.NimbusHost = "" }},
		{KeyNimbusHost, func(c *Config) { c.NimbusHost = "a b" }},
		{KeyNimbusHost, func(c *Config) { c.NimbusHost = "a:6627" }},
		{KeyNimbusGRPCPort, func(c *Config) { c.NimbusGRPCPort = -1 }},
		{KeyNimbusGRPCPort, func(c *Config) { c.NimbusGRPCPort = 70000 }},
		{KeyNimbusMetricsPort, func(c *Config) { c.NimbusMetricsPort = -2 }},
		{KeyNimbusMetricsPort, func(c *Config) { c.NimbusMetricsPort = 70000 }},
		{KeySupervisorMetricsPort, func(c *Config) { c.SupervisorMetricsPort = -2 }},
		{KeySupervisorGRPCPort, func(c *Config) { c.SupervisorGRPCPort = 70000 }},
		{KeySupervisorGRPCPort, func(c *Config) { c.SupervisorGRPCPort = c.SupervisorMetricsPort }},
		{KeySupervisorGRPCPort, func(c *Config) { c.SupervisorGRPCPort = c.SupervisorSlotsPorts[0] }},
		{KeyNimbusMetricsPort, func(c *Config) { c.NimbusMetricsPort = c.NimbusGRPCPort }},
		{KeyNimbusSeeds, func(c *Config) { c.NimbusSeeds = []string{} }},
		{KeyNimbusSeeds, func(c *Config) { c.NimbusSeeds = []string{"bad host"} }},
		{KeyNimbusSeeds, func(c *Config) { c.NimbusGRPCPort = 0; c.NimbusSeeds = []string{"localhost"} }},
		{KeyNimbusDrainTimeout, func(c *Config) { c.NimbusDrainTimeout = 0 }},
		{KeyNimbusMaxArtifactBytes, func(c *Config) { c.NimbusMaxArtifactBytes = 0 }},
		{KeyCodeDistributorClass, func(c *Config) { c.CodeDistributorClass = "" }},
		{KeyCodeDistributorClass, func(c *Config) { c.CodeDistributorClass = "local fs" }},
		{KeyMinReplicationCount, func(c *Config) { c.MinReplicationCount = 0 }},
		{KeyMaxReplicationWait, func(c *Config) { c.MaxReplicationWaitSecs = -2 }},
		{KeyCodeLostGrace, func(c *Config) { c.CodeLostGraceSecs = 0 }},
		{KeyCodeLostGrace, func(c *Config) { c.CodeLostGraceSecs = -2 }},
		{KeySnapshotInterval, func(c *Config) { c.SnapshotInterval = -time.Second }},
		{KeySnapshotRetain, func(c *Config) { c.SnapshotRetain = 0 }},
		{KeyTopologyMessageTimeout, func(c *Config) { c.TopologyMessageTimeout = 0 }},
		{KeyCodeSyncFreq, func(c *Config) { c.CodeSyncFreq = 0 }},
		{KeyMonitorFreq, func(c *Config) { c.MonitorFreq = 0 }},
		{KeySupervisorTimeout, func(c *Config) { c.SupervisorTimeout = 0 }},
		{KeySupervisorTimeout, func(c *Config) { c.SupervisorTimeout = c.SupervisorHeartbeat }},
		{KeySupervisorSlotsPorts, func(c *Config) { c.SupervisorSlotsPorts = []int{0} }},
		{KeySupervisorSlotsPorts, func(c *Config) { c.SupervisorSlotsPorts = []int{70000} }},
		{KeySupervisorSlotsPorts, func(c *Config) { c.SupervisorSlotsPorts = []int{6700, 6701, 6700} }},
		{KeySupervisorHeartbeat, func(c *Config) { c.SupervisorHeartbeat = 0 }},
		{KeyLocalHostname, func(c *Config) { c.LocalHostname = "" }},
		{KeyLocalHostname, func(c *Config) { c.LocalHostname = "a b" }},
		{KeyWorkerShutdownSleep, func(c *Config) { c.WorkerShutdownSleep = 0 }},
		{KeyHDFSStormDir, func(c *Config) { c.HDFSStormDir = "" }},
		{KeyHDFSStormDir, func(c *Config) { c.HDFSStormDir = "storm" }},
		{KeyBlobstoreDir, func(c *Config) { c.BlobstoreDir = "blobs" }},
		{KeyBlobstoreDir, func(c *Config) { c.BlobstoreDir = c.HDFSStormDir + "/" }},
		{KeyBlobstoreReplication, func(c *Config) { c.BlobstoreReplication = 0 }},
		{KeyBlobMaxBytes, func(c *Config) { c.BlobMaxBytes = 0 }},
		{KeyLocalizerCacheTargetMB, func(c *Config) { c.LocalizerCacheTargetMB = -1 }},
		{KeyHDFSNamenodeAddresses, func(c *Config) { c.HDFSNamenodeAddresses = []string{"nn 1"} }},
		{KeyHDFSNamenodeAddresses, func(c *Config) { c.CodeDistributorClass = CodeDistributorHDFS }},
		{KeyHDFSKerberosPrincipal, func(c *Config) { c.HDFSKerberosPrincipal = "nimbus@EXAMPLE.COM" }},
		{KeyHDFSKerberosKeytab, func(c *Config) { c.HDFSKerberosKeytab = "/etc/nimbus.keytab" }},
		{KeyBittorrentPort, func(c *Config) { c.BittorrentPort = -1 }},
		{KeyBittorrentPort, func(c *Config) { c.BittorrentPort = 70000 }},
		{KeyBittorrentTrackerURL, func(c *Config) { c.BittorrentTrackerURL = "ftp://tracker/announce" }},
		{KeyBittorrentTrackerURL, func(c *Config) { c.BittorrentTrackerURL = "http://" }},
		{KeyBittorrentTrackerURL, func(c *Config) { c.BittorrentTrackerURL = "::bad" }},
		{KeyBittorrentMaxUpload, func(c *Config) { c.BittorrentMaxUpload = -1 }},
		{KeyBittorrentMaxDownload, func(c *Config) { c.BittorrentMaxDownload = -5 }},
		{KeyBittorrentSeedPeers, func(c *Config) { c.BittorrentSeedPeers = 0 }},
		{KeyLogLevel, func(c *Config) { c.LogLevel = "trace" }},
		{KeyLogFormat, func(c *Config) { c.LogFormat = "xml" }},
		{KeyTLSCert, func(c *Config) { c.TLSEnable, c.TLSKey, c.TLSTruststore = true, "k.pem", "ca.pem" }},
		{KeyTLSKey, func(c *Config) { c.TLSEnable, c.TLSCert, c.TLSTruststore = true, "c.pem", "ca.pem" }},
		{KeyTLSKey, func(c *Config) { c.TLSCert = "c.pem" }},
		{KeyTLSTruststore, func(c *Config) { c.TLSEnable, c.TLSCert, c.TLSKey = true, "c.pem", "k.pem" }},
		{KeyTLSClientAuthRequired, func(c *Config) { c.TLSClientAuthRequired = true }},
		{KeyTLSPrincipal, func(c *Config) { c.TLSPrincipal = "subject" }},
		{KeyNimbusAdmins, func(c *Config) { c.NimbusAdmins = []string{""} }},
		{KeyNimbusUsers, func(c *Config) { c.NimbusUsers = []string{"a\nb"} }},
		{KeyNimbusSupervisorUsers, func(c *Config) { c.NimbusSupervisorUsers = []string{""} }},
		{KeyNimbusDaemonUsers, func(c *Config) { c.NimbusDaemonUsers = []string{"x,y"} }},
		{KeyZKAuthScheme, func(c *Config) { c.ZKAuthScheme = "sasl" }},
		{KeyZKAuthPayload, func(c *Config) { c.ZKAuthScheme, c.ZKAuthPayload = ZKAuthDigest, "nocolon" }},
		{KeyZKAuthPayload, func(c *Config) { c.ZKAuthPayload = "storm:secret" }},
		{KeyZKSuperACL, func(c *Config) { c.ZKSuperACL = "digest" }},
		{KeyZKMaxBuffer, func(c *Config) { c.ZKMaxBuffer = 1000 }},
		{KeyZKSSLTruststore, func(c *Config) { c.ZKSSLEnable = true }},
		{KeyZKSSLTruststore, func(c *Config) { c.ZKSSLTruststore = "ca.pem" }},
		{KeyZKSSLKeystore, func(c *Config) { c.ZKSSLKeystore = "zk.pem" }},
		{KeyPrincipalToLocal, func(c *Config) { c.PrincipalToLocal = "ldap" }},
		{KeySupervisorWorkerEnv, func(c *Config) { c.SupervisorWorkerEnv = []string{"JAVA-HOME"} }},
		{KeyNimbusMaxUploads, func(c *Config) { c.NimbusMaxUploads = 0 }},
		{KeyNimbusUploadIdleTimeout, func(c *Config) { c.NimbusUploadIdleTimeout = 0 }},
		{KeyNimbusMaxStreams, func(c *Config) { c.NimbusMaxStreams = 0 }},
		{KeyNimbusMaxMessageBytes, func(c *Config) { c.NimbusMaxMessageBytes = 1000 }},
		{KeyUIMaxConnections, func(c *Config) { c.UIMaxConnections = 0 }},
		{KeyNimbusMaxWatches, func(c *Config) { c.NimbusMaxWatches = 0 }},
		{KeyUIPort, func(c *Config) { c.UIPort = -2 }},
		{KeyNimbusHealthPort, func(c *Config) { c.NimbusHealthPort = -2 }},
		{KeyNimbusHealthPort, func(c *Config) { c.NimbusHealthPort = c.NimbusGRPCPort }},
		{KeyUIPort, func(c *Config) { c.UIPort = c.NimbusGRPCPort }},
		{KeyUIHost, func(c *Config) { c.UIHost = "nimbus1.example.com" }},
		{KeyLogviewerPort, func(c *Config) { c.LogviewerPort = -2 }},
		{KeyLogviewerPort, func(c *Config) { c.LogviewerPort = c.SupervisorMetricsPort }},
		{KeyLogviewerPort, func(c *Config) { c.LogviewerPort = c.SupervisorGRPCPort }},
		{KeyLogviewerPort, func(c *Config) { c.LogviewerPort = c.SupervisorSlotsPorts[1] }},
		{KeyLogviewerMaxPerWorkerMB, func(c *Config) { c.LogviewerMaxPerWorkerMB = 0 }},
		{KeyLogviewerMaxSumMB, func(c *Config) { c.LogviewerMaxSumMB = c.LogviewerMaxPerWorkerMB - 1 }},
		{KeyLogviewerCleanupInterval, func(c *Config) { c.LogviewerCleanupInterval = 0 }},
		{KeyLogsUsers, func(c *Config) { c.LogsUsers = []string{""} }},
	} {
		covered[tc.key] = true
		c := Default()
		tc.mutate(c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "configs: "+tc.key+": ") {
			t.Errorf("%s: Validate() = %v, want an error naming the key", tc.key, err)
		}
	}
	for _, key := range Keys() {
		// Any user name is valid; so is either value of these switches.
		if !covered[key] && key != KeyHDFSUser && key != KeyTLSEnable && key != KeyMetricsPprof && key != KeyRunWorkerAsUser && key != KeyUIActionsEnabled &&
			key != KeyZKSSLEnable && key != KeyZKSSLHostnameVerification {
			t.Errorf("no validation case for %s", key)
		}
	}
}

func TestValidateAccepts(t *testing.T) {
	for name, mutate := range map[string]func(c *Config){
		"IPv6 servers":                     func(c *Config) { c.ZKHosts = []string{"::1", "[::1]:2182", "10.0.0.1"} },
		"free ports":                       func(c *Config) { c.NimbusGRPCPort = 0; c.NimbusMetricsPort = 0; c.BittorrentPort = 0 },
		"metrics disabled":                 func(c *Config) { c.NimbusMetricsPort = PortDisabled },
		"wait forever":                     func(c *Config) { c.MaxReplicationWaitSecs = WaitForever },
		"no wait":                          func(c *Config) { c.MaxReplicationWaitSecs = 0 },
		"hdfs":                             func(c *Config) { c.CodeDistributorClass = "hdfs"; c.HDFSNamenodeAddresses = []string{"nn1:8020"} },
		"udp tracker":                      func(c *Config) { c.BittorrentTrackerURL = "udp://tracker:6969/announce" },
		"no slots":                         func(c *Config) { c.SupervisorSlotsPorts = []int{} },
		"nested root":                      func(c *Config) { c.ZKRoot = "/apps/storm" },
		"sub-second periods":               func(c *Config) { c.MonitorFreq = 50 * time.Millisecond },
		"TLS client without a certificate": func(c *Config) { c.TLSEnable, c.TLSTruststore = true, "ca.pem" },
	} {
		c := Default()
		mutate(c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateJoinsAll(t *testing.T) {
	c := Default()
	c.ZKPort = 0
	c.LogLevel = "loud"
	err := c.Validate()
	for _, key := range []string{KeyZKPort, KeyLogLevel} {
		if err == nil || !strings.Contains(err.Error(), "configs: "+key+": ") {
			t.Errorf("Validate() = %v, want it to name %s", err, key)
		}
	}
}

// A client may use TLS without a certificate of its own; a daemon may not.
func TestValidateServerNeedsACertificate(t *testing.T) {
	c := Default()
	c.TLSEnable, c.TLSTruststore = true, "ca.pem"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v for a client without a certificate", err)
	}
	if err := c.ValidateServer(); err == nil || !strings.Contains(err.Error(), "configs: "+KeyTLSCert+": ") {
		t.Errorf("ValidateServer() = %v, want it to name %s", err, KeyTLSCert)
	}
	c.TLSCert, c.TLSKey = "me.pem", "me.key"
	if err := c.ValidateServer(); err != nil {
		t.Errorf("ValidateServer() = %v with a certificate", err)
	}
}

func TestHelpers(t *testing.T) {
	c := Default()
	c.ZKHosts = []string{"zk1", "zk2:2182", "::1", "[::1]:2183"}
	c.NimbusHost = "n1"
	c.NimbusSeeds = []string{"n1", "n2:7000"}

	if want := []string{"zk1:2181", "zk2:2182", "[::1]:2181", "[::1]:2183"}; !slices.Equal(c.ZKServers(), want) {
		t.Errorf("ZKServers() = %q, want %q", c.ZKServers(), want)
	}
	if want := []string{"n1:6627", "n2:7000"}; !slices.Equal(c.SeedAddrs(), want) {
		t.Errorf("SeedAddrs() = %q, want %q", c.SeedAddrs(), want)
	}
	if got := c.NimbusAddr(); got != "n1:6627" {
		t.Errorf("NimbusAddr() = %q", got)
	}
	if d, forever := c.MaxReplicationWait(); d != time.Minute || forever {
		t.Errorf("MaxReplicationWait() = %v, %v", d, forever)
	}
	c.MaxReplicationWaitSecs = WaitForever
	if _, forever := c.MaxReplicationWait(); !forever {
		t.Error("MaxReplicationWait() not forever for -1")
	}
}

// A boolean key's flag stands alone, as pflag's own booleans do, and
// takes false only as --key=false: a separate "false" would be an argument.
func TestBooleanFlagStandsAlone(t *testing.T) {
	for args, want := range map[string]bool{
		"--" + KeyTLSEnable + " --" + KeyTLSTruststore + "=ca.pem":      true,
		"--" + KeyTLSEnable + "=true --" + KeyTLSTruststore + " ca.pem": true,
		"--" + KeyTLSEnable + "=false":                                  false,
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		RegisterFlags(fs, KeyTLSEnable, KeyTLSTruststore)
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		c, _, err := Load(fs)
		if err != nil || c.TLSEnable != want || len(fs.Args()) != 0 {
			t.Errorf("%s: tls %v, args %q, %v; want tls %v, no args", args, c != nil && c.TLSEnable, fs.Args(), err, want)
		}
	}
}

func TestRegisterFlags(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs, KeyNimbusGRPCPort)
	RegisterFlags(fs, KeyZKSessionTimeout) // --config only once
	if f := fs.Lookup(KeyNimbusGRPCPort); f == nil || f.Value.Type() != "int" || f.DefValue != "6627" {
		t.Errorf("flag %s = %+v", KeyNimbusGRPCPort, f)
	}
	if f := fs.Lookup(KeyZKSessionTimeout); f == nil || f.DefValue != "20s" {
		t.Errorf("flag %s = %+v", KeyZKSessionTimeout, f)
	}
	if fs.Lookup(KeyLogLevel) != nil {
		t.Error("registered a key that was not asked for")
	}

	defer func() {
		if recover() == nil {
			t.Error("RegisterFlags accepted an unknown key")
		}
	}()
	RegisterFlags(fs, "no.such.key")
}

// A supervisor with TLS serves its code port only with client
// authentication, or has it disabled.
func TestValidateSupervisor(t *testing.T) {
	c := Default()
	c.TLSEnable = true
	if err := c.ValidateSupervisor(); err == nil || !strings.Contains(err.Error(), KeySupervisorGRPCPort) || !strings.Contains(err.Error(), KeyTLSClientAuthRequired) {
		t.Fatalf("TLS without client authentication: %v", err)
	}
	c.TLSClientAuthRequired = true
	if err := c.ValidateSupervisor(); err != nil {
		t.Fatalf("with client authentication: %v", err)
	}
	c.TLSClientAuthRequired, c.SupervisorGRPCPort = false, PortDisabled
	if err := c.ValidateSupervisor(); err != nil {
		t.Fatalf("code port disabled: %v", err)
	}
}
