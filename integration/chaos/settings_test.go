package chaos_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// settings are what the environment asks of a run (doc.go).
type settings struct {
	seed     uint64        // CHAOS_SEED; the clock's by default
	duration time.Duration // CHAOS_DURATION (60 s), unless faults is set
	faults   int           // CHAOS_FAULTS: run until this many faults were injected
	every    time.Duration // CHAOS_FAULT_EVERY: the mean gap between faults; 0: 1 to 4 s
	kinds    []string      // CHAOS_FAULT_KINDS: only these kinds; all by default
	wipeAll  bool          // CHAOS_WIPE_ALL=1: add wipe-all-nimbus-code
}

func readSettings() (settings, error) {
	s := settings{seed: uint64(time.Now().UnixNano()), duration: 60 * time.Second}
	var err error
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		if s.seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return s, fmt.Errorf("CHAOS_SEED=%q: %w", v, err)
		}
	}
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		if s.duration, err = time.ParseDuration(v); err != nil || s.duration <= 0 {
			return s, fmt.Errorf("CHAOS_DURATION=%q: want a positive duration such as 5m", v)
		}
	}
	if v := os.Getenv("CHAOS_FAULTS"); v != "" {
		if s.faults, err = strconv.Atoi(v); err != nil || s.faults <= 0 {
			return s, fmt.Errorf("CHAOS_FAULTS=%q: want a positive number of faults", v)
		}
	}
	if v := os.Getenv("CHAOS_FAULT_EVERY"); v != "" {
		if s.every, err = time.ParseDuration(v); err != nil || s.every <= 0 {
			return s, fmt.Errorf("CHAOS_FAULT_EVERY=%q: want a positive duration such as 2s", v)
		}
	}
	if v := os.Getenv("CHAOS_FAULT_KINDS"); v != "" {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				s.kinds = append(s.kinds, k)
			}
		}
	}
	switch v := os.Getenv("CHAOS_WIPE_ALL"); v {
	case "", "0":
	case "1":
		s.wipeAll = true
	default:
		return s, fmt.Errorf("CHAOS_WIPE_ALL=%q: want 1 or 0", v)
	}
	return s, nil
}

// String says how long the run lasts and how often faults come.
func (s settings) String() string {
	length := fmt.Sprintf("%s of faults", s.duration)
	if s.faults > 0 {
		length = fmt.Sprintf("until %d faults", s.faults)
	}
	every := "a fault every 1 to 4 s"
	if s.every > 0 {
		every = fmt.Sprintf("a fault every %s to %s", s.every/2, s.every*3/2)
	}
	kinds := "every kind"
	if len(s.kinds) > 0 {
		kinds = strings.Join(s.kinds, ",")
	}
	if s.wipeAll {
		kinds += " (with " + wipeAllName + ")"
	}
	return fmt.Sprintf("%s, %s, %s", length, every, kinds)
}

// env is the environment that replays the run (with CHAOS_SEED).
func (s settings) env() string {
	out := []string{"CHAOS_DURATION=" + s.duration.String()}
	if s.faults > 0 {
		out = []string{"CHAOS_FAULTS=" + strconv.Itoa(s.faults)}
	}
	if s.every > 0 {
		out = append(out, "CHAOS_FAULT_EVERY="+s.every.String())
	}
	if len(s.kinds) > 0 {
		out = append(out, "CHAOS_FAULT_KINDS="+strings.Join(s.kinds, ","))
	}
	if s.wipeAll {
		out = append(out, "CHAOS_WIPE_ALL=1")
	}
	return strings.Join(out, " ")
}
