package chaos_test

import (
	"strings"
	"testing"
	"time"
)

func TestSettings(t *testing.T) {
	t.Setenv("CHAOS_SEED", "7")
	t.Setenv("CHAOS_DURATION", "")
	t.Setenv("CHAOS_FAULTS", "1000")
	t.Setenv("CHAOS_FAULT_EVERY", "2s")
	t.Setenv("CHAOS_FAULT_KINDS", "kill-leader, cut-nimbus-from-nimbuses")
	t.Setenv("CHAOS_WIPE_ALL", "1")
	s, err := readSettings()
	if err != nil {
		t.Fatal(err)
	}
	if s.seed != 7 || s.duration != 60*time.Second || s.faults != 1000 || s.every != 2*time.Second || !s.wipeAll ||
		strings.Join(s.kinds, ",") != "kill-leader,cut-nimbus-from-nimbuses" {
		t.Errorf("got %+v", s)
	}
	if want := "CHAOS_FAULTS=1000 CHAOS_FAULT_EVERY=2s CHAOS_FAULT_KINDS=kill-leader,cut-nimbus-from-nimbuses CHAOS_WIPE_ALL=1"; s.env() != want {
		t.Errorf("env() = %q, want %q", s.env(), want)
	}
	for key, bad := range map[string]string{
		"CHAOS_FAULTS": "0", "CHAOS_FAULT_EVERY": "-1s", "CHAOS_DURATION": "soon", "CHAOS_WIPE_ALL": "yes", "CHAOS_SEED": "x",
	} {
		t.Run(key, func(t *testing.T) {
			t.Setenv(key, bad)
			if _, err := readSettings(); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s=%s: err %v, want one naming the key", key, bad, err)
			}
		})
	}
}

func TestSettingsDefaults(t *testing.T) {
	for _, key := range []string{"CHAOS_SEED", "CHAOS_DURATION", "CHAOS_FAULTS", "CHAOS_FAULT_EVERY", "CHAOS_FAULT_KINDS", "CHAOS_WIPE_ALL"} {
		t.Setenv(key, "")
	}
	s, err := readSettings()
	if err != nil {
		t.Fatal(err)
	}
	if s.duration != 60*time.Second || s.faults != 0 || s.every != 0 {
		t.Errorf("defaults: %+v", s)
	}
}
