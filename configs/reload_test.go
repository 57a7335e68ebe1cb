package configs

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Through viper, each layer overrides the one before and every value says
// where it came from: the file with its line, the variable, the flag.
func TestViperMergeOrderAndSources(t *testing.T) {
	isolate(t)
	path := writeFile(t, "nimbus.grpc.port: 7001\nnimbus.metrics.port: 7002\nui.port: 7003\n")
	t.Setenv("STORM_NIMBUS_METRICS_PORT", "7102")
	t.Setenv("STORM_UI_PORT", "7103")
	c := mustLoad(t, "--config", path, "--ui.port", "7203")
	for _, tc := range []struct {
		key  string
		got  int
		want int
		src  string
	}{
		{KeyNimbusGRPCPort, c.NimbusGRPCPort, 7001, path + ":1"},
		{KeyNimbusMetricsPort, c.NimbusMetricsPort, 7102, "STORM_NIMBUS_METRICS_PORT"},
		{KeyUIPort, c.UIPort, 7203, "--ui.port"},
		{KeyZKPort, c.ZKPort, DefaultZKPort, "default"},
	} {
		if tc.got != tc.want || c.Sources[tc.key].String() != tc.src {
			t.Errorf("%s = %d from %s, want %d from %s", tc.key, tc.got, c.Sources[tc.key], tc.want, tc.src)
		}
	}
}

// A key written twice in different case is refused: viper would keep either.
func TestKeyTwiceInDifferentCase(t *testing.T) {
	isolate(t)
	path := writeFile(t, "nimbus.admins: [a]\nNIMBUS.ADMINS: [b]\n")
	_, _, err := LoadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+":2: NIMBUS.ADMINS: set again (also as nimbus.admins at line 1)") {
		t.Fatalf("err = %v, want the second spelling refused with both lines", err)
	}
}

// A reload applies the reloadable keys, lists the others as needing a
// restart without applying them, keeps flags, and keeps the running
// configuration when the file no longer loads.
func TestReloadDiff(t *testing.T) {
	isolate(t)
	path := writeFile(t, "nimbus.admins: [alice]\nnimbus.grpc.port: 7001\nlog.level: info\n")
	running := mustLoad(t, "--config", path, "--nimbus.users", "carol")

	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reload := func() (Reload, error) {
		t.Helper()
		next, _, err := Reread(running)
		if err != nil {
			return Reload{}, err
		}
		return Apply(running, next)
	}

	write("nimbus.admins: [bob]\nnimbus.grpc.port: 7009\nlog.level: debug\nstorm.zookeeper.auth.scheme: digest\nstorm.zookeeper.auth.payload: u:p\n")
	r, err := reload()
	if err != nil {
		t.Fatal(err)
	}
	if got := KeysOf(r.Applied); !slices.Equal(got, []string{KeyLogLevel, KeyNimbusAdmins}) {
		t.Errorf("applied %v, want nimbus.admins and log.level", got)
	}
	if got := KeysOf(r.Restart); !slices.Equal(got, []string{KeyNimbusGRPCPort, KeyZKAuthScheme, KeyZKAuthPayload}) {
		t.Errorf("restart %v, want nimbus.grpc.port and the payload", got)
	}
	c := r.Config
	if !slices.Equal(c.NimbusAdmins, []string{"bob"}) || c.LogLevel != "debug" || c.Sources[KeyNimbusAdmins].Line != 1 {
		t.Errorf("admins %v (from %s), level %s: the reloadable keys not applied", c.NimbusAdmins, c.Sources[KeyNimbusAdmins], c.LogLevel)
	}
	if c.NimbusGRPCPort != 7001 || c.ZKAuthPayload != "" || running.NimbusGRPCPort != 7001 || !slices.Equal(running.NimbusAdmins, []string{"alice"}) {
		t.Errorf("port %d, payload %q, running %d %v: a change needing a restart was applied, or running was changed",
			c.NimbusGRPCPort, c.ZKAuthPayload, running.NimbusGRPCPort, running.NimbusAdmins)
	}
	if !slices.Equal(c.NimbusUsers, []string{"carol"}) || c.Sources[KeyNimbusUsers].Kind != FromFlag {
		t.Errorf("users %v from %s: the flag's value was lost", c.NimbusUsers, c.Sources[KeyNimbusUsers])
	}
	for _, ch := range r.Restart {
		if ch.Key == KeyZKAuthPayload && (ch.Old != redacted || ch.New != redacted) {
			t.Errorf("a secret's change shows its value: %v", ch)
		}
	}

	write("nimbus.admins: [bob]\nnimbus.max.concurrent.uploads: many\n")
	if _, err := reload(); err == nil || !strings.Contains(err.Error(), path+":2: nimbus.max.concurrent.uploads") {
		t.Errorf("an invalid file: %v, want an error naming the file, line and key", err)
	}
	write("nimbus.admins: [bob]\nnimbus.max.concurrent.uploads: 0\n")
	if _, err := reload(); err == nil || !strings.Contains(err.Error(), KeyNimbusMaxUploads) {
		t.Errorf("a file breaking a rule: %v, want an error naming the key", err)
	}
}
