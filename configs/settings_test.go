package configs

import (
	"strings"
	"testing"
)

// TestSettingsSources: Load records where each value came from, the
// default, a file's line, a variable or a flag, and Settings reports each
// key once, sorted, as text a file would accept.
func TestSettingsSources(t *testing.T) {
	isolate(t)
	path := writeFile(t, strings.Join([]string{
		"# a comment",
		"storm.zookeeper.servers:",
		"  - zk1",
		"  - zk2",
		"nimbus.monitor.freq.secs: 7",
		"storm.zookeeper.auth.payload: \"nimbus:s3cret\"",
		"storm.zookeeper.auth.scheme: digest",
		"",
	}, "\n"))
	t.Setenv("STORM_ZOOKEEPER_PORT", "2182")
	c := mustLoad(t, "--config", path, "--nimbus.drain.timeout.secs=250ms")

	got := map[string]Setting{}
	var keys []string
	for _, s := range c.Settings() {
		if _, dup := got[s.Key]; dup {
			t.Errorf("%s twice", s.Key)
		}
		got[s.Key] = s
		keys = append(keys, s.Key)
	}
	if len(keys) != len(Keys()) {
		t.Errorf("%d settings, %d keys", len(keys), len(Keys()))
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("not sorted: %s before %s", keys[i-1], keys[i])
		}
	}
	for _, tc := range []struct{ key, value, source string }{
		{KeyZKServers, "zk1,zk2", path + ":2"},
		{KeyMonitorFreq, "7s", path + ":5"},
		{KeyZKAuthPayload, "nimbus:s3cret", path + ":6"},
		{KeyZKPort, "2182", "STORM_ZOOKEEPER_PORT"},
		{KeyNimbusDrainTimeout, "250ms", "--nimbus.drain.timeout.secs"},
		{KeyZKRoot, DefaultZKRoot, "default"},
		{KeyZKSessionTimeout, "20s", "default"},
		{KeySupervisorSlotsPorts, "6700,6701,6702,6703", "default"},
	} {
		s := got[tc.key]
		if s.Value != tc.value || s.Source.String() != tc.source {
			t.Errorf("%s = %q from %s, want %q from %s", tc.key, s.Value, s.Source, tc.value, tc.source)
		}
	}

	// A Config built in code names no sources: all defaults.
	for _, s := range Default().Settings() {
		if s.Source.Kind != FromDefault {
			t.Errorf("Default(): %s from %s", s.Key, s.Source)
		}
	}
}

// TestSettingsLoadBack: every value Settings writes loads back as the
// same value, from a variable as from a flag.
func TestSettingsLoadBack(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "--nimbus.drain.timeout.secs=1500ms", "--storm.zookeeper.servers=a,b:2000")
	for _, s := range c.Settings() {
		t.Setenv(EnvName(s.Key), s.Value)
	}
	back := mustLoad(t)
	for i, s := range back.Settings() {
		if want := c.Settings()[i]; s.Key != want.Key || s.Value != want.Value {
			t.Errorf("%s = %q, loaded back %q", want.Key, want.Value, s.Value)
		}
	}
}

func TestIsSecretKey(t *testing.T) {
	for key, secret := range map[string]bool{
		"topology.message.timeout.secs":         false,
		"topology.workers":                      false,
		"topology.users":                        false,
		"topology.environment":                  false,
		"topology.spout.wait.strategy":          false,
		"topology.kryo.register":                false,
		"db.password":                           true,
		"DB_PASSWORD":                           true,
		"mysql.passwd":                          true,
		"app.client-secret":                     true,
		"github.token":                          true,
		"topology.auto-credentials":             true,
		"storm.zookeeper.topology.auth.payload": true,
		"aws.accessKey":                         true,
		"api_key":                               true,
		"ssh.private.path":                      true,
		"kafka.ssl.keystore.location":           true,
		KeyZKAuthPayload:                        true,
		KeyZKRoot:                               false,
	} {
		if got := IsSecretKey(key); got != secret {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, secret)
		}
	}
}
