package configs

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Fuzz targets for loading a config. Run one for longer with:
// go test ./configs -run '^$' -fuzz '^FuzzLoadFile$'

// FuzzLoadFile loads any bytes as storm.yaml: Load never panics, every
// problem it reports names the file (YAML it cannot parse) or a key, and
// what it accepts is a config the daemons can use (checkAccepted).
func FuzzLoadFile(f *testing.F) {
	sample, err := os.ReadFile("storm.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(sample),
		"",
		"nimbus.grpc.port: 7001\n",
		"storm.zookeeper.servers: [zk1, \"zk2:2182\", \"[::1]:2181\", ::1]\nstorm.zookeeper.port: 2181\n",
		// A host with a comma was accepted, and came back from its
		// flags as two (found by checkAccepted on this seed, not by the
		// fuzzer in 2 minutes).
		"storm.zookeeper.servers: [zk1, \"zk2,2182\"]\n",
		"storm.zookeeper.session.timeout: 30000\nnimbus.code.sync.freq.secs: \"2m\"\nnimbus.monitor.freq.secs: 1.5\n",
		"nimbus.seeds: n1, n2:7000\nsupervisor.slots.ports: [6700, 6701]\nhdfs.user: 1000\n",
		"nimbus.host: [a, b]\nnimbus.seeds: {a: 1}\nsupervisor.slots.ports: 6700\n",
		"storm.codedistributor.class: hdfs\nhdfs.namenode.addresses: [nn1:8020]\nbittorrent.tracker.url: udp://t:6969\n",
		"nimbus.metrics.port: 6627\nnimbus.supervisor.timeout.secs: 5\nlog.level: trace\n",
		"topology.max.replication.wait.time.sec: -1\nnimbus.max.artifact.bytes: 9223372036854775807\n",
		"unknown.key: 1\nnimbus: {host: x}\n",
		"- a\n- b\n",
		"nimbus.host: &a x\nstorm.local.hostname: *a\n",
		"\tbad: [\n",
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "storm.yaml") // one per worker process
	f.Fuzz(func(t *testing.T, yaml []byte) {
		isolate(t)
		if err := os.WriteFile(path, yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err := LoadFile(path)
		if err != nil {
			if c != nil {
				t.Fatalf("LoadFile returned a config and %v", err)
			}
			for _, e := range Leaves(err) {
				if strings.HasPrefix(e.Error(), "configs: parse "+path+": ") {
					continue
				}
				// Every other problem is a key's, and names the
				// file (what the file set, or a typo in it) or is
				// a default's (a rule the file's values broke).
				var ke *KeyError
				if !errors.As(e, &ke) || ke.Key == "" ||
					(ke.Source.Kind == FromFile) != strings.HasPrefix(e.Error(), "configs: "+path) ||
					(ke.Source.Kind != FromFile && ke.Source.Kind != FromDefault) {
					t.Fatalf("error %q names neither the file nor a key", e)
				}
			}
			return
		}
		checkAccepted(t, c)
	})
}

// partners are the other keys whose rules a value of a key can break:
// with all else at its default, an error about key names key or one of
// these.
var partners = map[string][]string{
	KeyNimbusGRPCPort:       {KeyNimbusMetricsPort, KeyNimbusSeeds, KeyUIPort, KeyNimbusHealthPort},
	KeyNimbusMetricsPort:    {KeyUIPort, KeyNimbusHealthPort},
	KeyUIPort:               {KeyNimbusHealthPort},
	KeySupervisorHeartbeat:  {KeySupervisorTimeout},
	KeyCodeDistributorClass: {KeyHDFSNamenodeAddresses},
	KeyTLSEnable:            {KeyTLSTruststore},
	KeyTLSCert:              {KeyTLSKey},
	KeyTLSKey:               {KeyTLSCert},
	KeyZKAuthScheme:         {KeyZKAuthPayload},
	// A supervisor's ports may not be each other's.
	KeySupervisorMetricsPort: {KeySupervisorGRPCPort, KeyLogviewerPort},
	KeySupervisorGRPCPort:    {KeyLogviewerPort},
	KeySupervisorSlotsPorts:  {KeySupervisorGRPCPort, KeyLogviewerPort},
	// The cap on all workers' logs holds at least one worker's.
	KeyLogviewerMaxPerWorkerMB: {KeyLogviewerMaxSumMB},
	// Blobs in HDFS live apart from the code.
	KeyHDFSStormDir: {KeyBlobstoreDir},
	// TLS to ZooKeeper verifies ZooKeeper with a truststore.
	KeyZKSSLEnable: {KeyZKSSLTruststore},
}

// FuzzLoadEnv sets one key's environment variable to any text over the
// defaults: Load never panics, an error names that key (or a key whose
// rule involves it), and what it accepts is usable (checkAccepted).
func FuzzLoadEnv(f *testing.F) {
	keys := Keys()
	for i, fl := range fields {
		_, text := describe(fl.ptr(Default()))
		f.Add(uint8(i), text)
		f.Add(uint8(i), " "+text+" ")
		f.Add(uint8(i), "x")
		f.Add(uint8(i), "-1")
	}
	for _, s := range []string{"0", "5s", "1.5", "9223372036854775807", "1m30s", "-5ms", "a,,b", "[::1]:2181,zk2", "zk1:0", "/a//b", "http://", "hdfs"} {
		f.Add(uint8(0), s)
	}
	f.Fuzz(func(t *testing.T, i uint8, value string) {
		if strings.IndexByte(value, 0) >= 0 {
			t.Skip() // no environment variable holds a NUL
		}
		key := keys[int(i)%len(keys)]
		isolate(t)
		t.Setenv(EnvName(key), value)
		c, _, err := LoadFile("")
		if err != nil {
			allowed := append([]string{key}, partners[key]...)
			for _, e := range Leaves(err) {
				if named := namedKey(e); !slices.Contains(allowed, named) {
					t.Fatalf("%s=%q: error %q does not name %v", EnvName(key), value, e, allowed)
				}
				// The key set in the environment is reported by
				// its variable, as the operator wrote it.
				if var_ := "configs: " + EnvName(key) + ": "; namedKey(e) == key && !strings.HasPrefix(e.Error(), var_) {
					t.Fatalf("%s=%q: error %q does not start %q", EnvName(key), value, e, var_)
				}
			}
			return
		}
		checkAccepted(t, c)
	})
}

// checkAccepted fails t unless c, which Load accepted, passes Validate,
// gives addresses a dialer can parse, and loads back to itself from its
// own text given as flags.
func checkAccepted(t *testing.T, c *Config) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("an accepted config does not validate: %v", err)
	}
	check := func(key, addr string, zeroPort bool) {
		host, port, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 0 || n > 65535 || (n == 0 && !zeroPort) {
			t.Fatalf("accepted %s gives the address %q, which does not parse as host:port (%v)", key, addr, err)
		}
	}
	for _, a := range c.ZKServers() {
		check(KeyZKServers, a, false)
	}
	for _, a := range c.SeedAddrs() {
		check(KeyNimbusSeeds, a, false)
	}
	check(KeyNimbusHost, c.NimbusAddr(), true)                                // port 0: the caller puts the bound one in
	check(KeyLocalHostname, net.JoinHostPort(c.LocalHostname, "6881"), false) // a supervisor's peer address

	fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
	RegisterFlags(fs, Keys()...)
	var args []string
	for _, f := range fields {
		_, text := describe(f.ptr(c))
		args = append(args, "--"+f.key+"="+text)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	back, _, err := Load(fs)
	if back != nil {
		back.Sources, c.Sources = nil, nil // the values must match, not where they came from
		back.File, c.File = "", ""
	}
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("an accepted config does not load back from its flags %q: %v\n%+v\n%+v", args, err, c, back)
	}
}

// namedKey returns the known key a KeyError is about, or "".
func namedKey(err error) string {
	var ke *KeyError
	if !errors.As(err, &ke) {
		return ""
	}
	if _, known := lookupField(ke.Key); !known {
		return ""
	}
	return ke.Key
}
