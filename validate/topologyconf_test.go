package validate

import (
	"errors"
	"strings"
	"testing"
)

// TestTopologyConf: the known topology.* keys are type- and range-checked
// with an error naming the key; other keys pass whatever they hold.
func TestTopologyConf(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		inReason   string // "" accepts
	}{
		{"topology.message.timeout.secs", "5", ""},
		{"topology.message.timeout.secs", " 30 ", ""},
		{"topology.message.timeout.secs", "abc", `"abc" is not an integer`},
		{"topology.message.timeout.secs", "5s", `"5s" is not an integer`},
		{"topology.message.timeout.secs", "0", "between 1 and 86400, got 0"},
		{"topology.message.timeout.secs", "86401", "got 86401"},
		{"topology.message.timeout.secs", "99999999999999999999", "is not an integer"},
		{"topology.min.replication.count", "2", ""},
		{"topology.min.replication.count", "0", "between 1 and 1000, got 0"},
		{"topology.min.replication.count", "", `"" is not an integer`},
		{"topology.max.replication.wait.time.sec", "-1", ""},
		{"topology.max.replication.wait.time.sec", "0", ""},
		{"topology.max.replication.wait.time.sec", "-2", "between -1 and 86400"},
		{"topology.workers", "0", "between 1 and 10000"},
		{"topology.debug", "true", ""},
		{"topology.debug", "False", ""},
		{"topology.debug", "yes", `"yes" is not a boolean`},
		{"topology.users", "alice, bob", ""},
		{"topology.users", "alice\nroot", "control characters"},
		{"topology.environment", "A=1,B=2", ""},
		{"topology.environment", "STORM_X=1", "supervisor's"},
		{"topology.spout.wait.strategy", "anything at all", ""},
		{"topology.max.spout.pending", "not checked", ""},
	} {
		spec := validSpec()
		spec.Config = map[string]string{tc.key: tc.value}
		err := Spec(spec)
		if tc.inReason == "" {
			if err != nil {
				t.Errorf("%s=%q: %v", tc.key, tc.value, err)
			}
			continue
		}
		var ve *Error
		if !errors.As(err, &ve) || ve.Field != `spec.config["`+tc.key+`"]` || !strings.Contains(ve.Reason, tc.inReason) {
			t.Errorf("%s=%q: got %v, want spec.config[%q] with %q", tc.key, tc.value, err, tc.key, tc.inReason)
		}
	}
}

func TestNumWorkers(t *testing.T) {
	spec := validSpec()
	if n := NumWorkers(spec); n != 3 {
		t.Errorf("NumWorkers = %d, want 3", n)
	}
	spec.NumWorkers, spec.Config["topology.workers"] = 0, "7"
	if err := Spec(spec); err != nil {
		t.Fatal(err)
	}
	if n := NumWorkers(spec); n != 7 {
		t.Errorf("NumWorkers = %d, want 7 from topology.workers", n)
	}
}
