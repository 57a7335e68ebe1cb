package configs

import (
	"os"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"port", "port", 0},
		{"prot", "port", 1},  // a swap is one edit
		{"ports", "port", 1}, // a deletion
		{"replicaton", "replication", 1},
		{"grpc", "gprc", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
		{"thrift", "grpc", 5},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetry)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := Keys()
	for name, want := range map[string]string{
		"nimbus.grpc.prot":              KeyNimbusGRPCPort,
		"nimbus.grcp.port":              KeyNimbusGRPCPort,
		"supervisor.slots.port":         KeySupervisorSlotsPorts,
		"topology.min.replicaton.count": KeyMinReplicationCount,
		"topology.min.replicatoin.cont": KeyMinReplicationCount, // two slips in a long key
		"STORM.ZOOKEEPER.PORT":          KeyZKPort,              // case is no edit
		"storm.zookeeper.superacl":      KeyZKSuperACL,
		"log.levl":                      KeyLogLevel,
		"log.lvl":                       "", // two edits in seven letters: a different word
		"nimbus.thrift.port":            "", // Storm's key, not a typo of ours
		"storm.log.dir":                 "",
		"":                              "",
	} {
		if got := Closest(name, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
	if got := Closest("nimbus.grpc.port", nil); got != "" {
		t.Errorf("Closest with no candidates = %q", got)
	}
}

// A Storm file must keep working: none of Storm's own keys that Nimbus-HA
// does not read may be taken for a typo of one it does, or the daemon
// would refuse a file it should only warn about.
func TestStormKeysAreNotTypos(t *testing.T) {
	b, err := os.ReadFile("testdata/storm-defaults-keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if _, known := lookupField(line); known {
			continue
		}
		if got := Closest(line, Keys()); got != "" {
			t.Errorf("Storm's key %s is taken for a typo of %s", line, got)
		}
		if got := Closest(EnvName(line), envNames()); got != "" {
			t.Errorf("Storm's key as %s is taken for a typo of %s", EnvName(line), got)
		}
	}
	if n < 200 {
		t.Fatalf("only %d keys in the list", n)
	}
}

func envNames() []string {
	var out []string
	for _, k := range Keys() {
		out = append(out, EnvName(k))
	}
	return out
}
