package nimbus

import (
	"testing"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// TestInProcessNimbusConfig: any nimbus answers GetNimbusConfig for
// itself, naming itself: every key, its value as text and its source,
// the ZooKeeper digest payload redacted.
func TestInProcessNimbusConfig(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) {
		c.ZKAuthScheme, c.ZKAuthPayload = "digest", "nimbus:hunter2"
		c.NimbusAdmins = []string{"ada", "bob"}
		c.Sources = map[string]configs.Source{
			configs.KeyZKAuthScheme:   {Kind: configs.FromFile, Name: "storm.yaml", Line: 3},
			configs.KeyZKAuthPayload:  {Kind: configs.FromEnv, Name: "STORM_ZOOKEEPER_AUTH_PAYLOAD"},
			configs.KeyNimbusAdmins:   {Kind: configs.FromFile, Name: "storm.yaml", Line: 4},
			configs.KeyNimbusGRPCPort: {Kind: configs.FromFlag, Name: configs.KeyNimbusGRPCPort},
		}
	})
	awaitLeading(t, s)

	resp, err := sdk(t, s).GetNimbusConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetNimbus() != s.Addr() {
		t.Errorf("answered by %q, want %q", resp.GetNimbus(), s.Addr())
	}
	if n := len(resp.GetEntries()); n != len(configs.Keys()) {
		t.Errorf("%d entries, want one per key (%d)", n, len(configs.Keys()))
	}
	type shown struct {
		value, source string
		redacted      bool
	}
	got := map[string]shown{}
	prev := ""
	for _, e := range resp.GetEntries() {
		if e.GetKey() <= prev {
			t.Errorf("not sorted: %s after %s", e.GetKey(), prev)
		}
		prev = e.GetKey()
		got[e.GetKey()] = shown{e.GetValue(), e.GetSource(), e.GetRedacted()}
		if e.GetRedacted() != configs.IsSecretKey(e.GetKey()) {
			t.Errorf("%s: redacted %v", e.GetKey(), e.GetRedacted())
		}
		if e.GetValue() == "nimbus:hunter2" {
			t.Errorf("%s shows the ZooKeeper password", e.GetKey())
		}
	}
	for key, want := range map[string]shown{
		configs.KeyZKAuthPayload:      {"<redacted>", "STORM_ZOOKEEPER_AUTH_PAYLOAD", true},
		configs.KeyZKAuthScheme:       {"digest", "storm.yaml:3", false},
		configs.KeyNimbusAdmins:       {"ada,bob", "storm.yaml:4", false},
		configs.KeyNimbusGRPCPort:     {"0", "--nimbus.grpc.port", false},
		configs.KeyZKRoot:             {configs.DefaultZKRoot, "default", false},
		configs.KeyNimbusDrainTimeout: {"1s", "default", false},
	} {
		if got[key] != want {
			t.Errorf("%s: got %+v, want %+v", key, got[key], want)
		}
	}
}
